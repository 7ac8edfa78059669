package redisstore

import "github.com/redis/go-redis/v9"

// acquireScript is the acquire script of docs/contract.md §5: one atomic read-decide-write
// on the operation's hash, extended only to also record subject, scope,
// claimed_at, exp, approval_sha256 and acting_client at claim time, to
// answer IN_FLIGHT with claimed_at and the holder's acting_client, and to answer a terminal record with
// what its receipt names (subject, scope, approval_sha256, acting_client).
// The TTL is in milliseconds (PEXPIRE) so that a time.Duration round-trips.
//
// KEYS[1] = idem:{<operation_id>}
// ARGV[1] = param_hash
// ARGV[2] = owner (this execution attempt's unique id)
// ARGV[3] = in-flight TTL, milliseconds
// ARGV[4] = subject
// ARGV[5] = scope
// ARGV[6] = claimed_at, unix milliseconds (passed in: scripts stay deterministic)
// ARGV[7] = the fingerprint's exp, unix seconds
// ARGV[8] = approval_sha256 (empty without approval)
// ARGV[9] = acting_client (empty when the token named none)
//
// Reply: {'ACQUIRED', ""} | {'PARAM_MISMATCH', ""}
// | {'DONE'|'FAILED', result, subject, scope, approval_sha256, acting_client}
// | {'IN_FLIGHT', owner, claimed_at, acting_client}.
var acquireScript = redis.NewScript(`
local head = redis.call('HMGET', KEYS[1], 'state', 'param_hash')
local st = head[1]

-- first consumption: claim it, IN_FLIGHT
if st == false then
  redis.call('HSET', KEYS[1],
             'state', 'IN_FLIGHT',
             'param_hash', ARGV[1],
             'owner', ARGV[2],
             'subject', ARGV[4],
             'scope', ARGV[5],
             'claimed_at', ARGV[6],
             'exp', ARGV[7],
             'approval_sha256', ARGV[8],
             'acting_client', ARGV[9])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
  return {'ACQUIRED', ''}
end

-- the params were swapped: refuse, this is a security event
if head[2] ~= ARGV[1] then
  return {'PARAM_MISMATCH', ''}
end

-- terminal: replay the first result (one HMGET, not four HGETs)
if st == 'DONE' or st == 'FAILED' then
  local f = redis.call('HMGET', KEYS[1], 'result', 'subject', 'scope', 'approval_sha256', 'acting_client')
  return {st, f[1], f[2], f[3], f[4], f[5]}
end

-- in flight: the caller waits and polls, it does not resend
local f = redis.call('HMGET', KEYS[1], 'owner', 'claimed_at', 'acting_client')
return {'IN_FLIGHT', f[1], f[2], f[3]}
`)

// finalizeScript is the finalize script of docs/contract.md §5: owner-checked, so that an
// old execution whose claim expired and was taken by another owner cannot
// overwrite the newer one. Extended so that a terminal record is never
// overwritten: the same outcome again is an idempotent 'OK' (an activity
// retry), another outcome is 'ALREADY_TERMINAL'. The outcome it writes is
// announced on the outcomes channel (outcomeMessage), where a gateway
// waiting for it hears it at once (Outcomes).
//
// KEYS[1] = idem:{<operation_id>}
// ARGV[1] = owner
// ARGV[2] = DONE | FAILED
// ARGV[3] = result blob (JSON: result, result_ref, reason, completed_at, ...)
// ARGV[4] = terminal TTL, milliseconds
// ARGV[5] = the outcomes channel (OutcomesChannel)
//
// Reply: 'OK' | 'NOT_OWNER' | 'ALREADY_TERMINAL'.
var finalizeScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 'NOT_OWNER'   -- expired and claimed by another owner: never overwrite
end
local st = redis.call('HGET', KEYS[1], 'state')
if st == 'DONE' or st == 'FAILED' then
  if st == ARGV[2] then
    return 'OK'
  end
  return 'ALREADY_TERMINAL'
end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'result', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PUBLISH', ARGV[5], KEYS[1] .. '\n' .. ARGV[2] .. '\n' .. ARGV[3])
return 'OK'
`)

// takeoverScript moves an IN_FLIGHT claim from one owner to another.
//
// KEYS[1] = idem:{<operation_id>}
// ARGV[1] = from owner
// ARGV[2] = to owner
// ARGV[3] = claimed_at, unix milliseconds
// ARGV[4] = in-flight TTL, milliseconds
//
// Reply: 'OK' | 'NOT_OWNER'.
var takeoverScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'state') ~= 'IN_FLIGHT' or redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 'NOT_OWNER'
end
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'claimed_at', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 'OK'
`)

// releaseScript deletes an IN_FLIGHT claim held by owner, so that a claim
// taken when nothing could be started leaves nothing consumed.
//
// KEYS[1] = idem:{<operation_id>}
// ARGV[1] = owner
//
// Reply: 'OK' | 'NOT_OWNER'.
var releaseScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'state') ~= 'IN_FLIGHT' or redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then
  return 'NOT_OWNER'
end
redis.call('DEL', KEYS[1])
return 'OK'
`)

// refillScript replaces the hash unconditionally with a terminal record that
// the truth answered (after a FLUSHALL or a failover lost it), and announces
// it on the outcomes channel as finalizeScript does.
//
// KEYS[1] = idem:{<operation_id>}
// ARGV[1] = state (DONE | FAILED)
// ARGV[2] = param_hash
// ARGV[3] = owner
// ARGV[4] = subject
// ARGV[5] = scope
// ARGV[6] = claimed_at, unix milliseconds or empty
// ARGV[7] = exp, unix seconds or empty
// ARGV[8] = result blob
// ARGV[9] = TTL, milliseconds
// ARGV[10] = approval_sha256 (empty without approval)
// ARGV[11] = the outcomes channel (OutcomesChannel)
// ARGV[12] = acting_client (empty when the token named none)
//
// Reply: 'OK'.
var refillScript = redis.NewScript(`
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1],
           'state', ARGV[1],
           'param_hash', ARGV[2],
           'owner', ARGV[3],
           'subject', ARGV[4],
           'scope', ARGV[5],
           'claimed_at', ARGV[6],
           'exp', ARGV[7],
           'result', ARGV[8],
           'approval_sha256', ARGV[10],
           'acting_client', ARGV[12])
redis.call('PEXPIRE', KEYS[1], ARGV[9])
redis.call('PUBLISH', ARGV[11], KEYS[1] .. '\n' .. ARGV[1] .. '\n' .. ARGV[8])
return 'OK'
`)
