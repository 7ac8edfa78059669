package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/operation"
)

// The recent-intent index (idemstore/intent.go): one hash per subject,
// recent:{<subject>}, so that a preview reads it in one command on one
// cluster slot. Its fields:
//
//	<scope>|<param_hash>  <operation_id>|<created, unix ms>|<expires, unix ms>
//	!warm                 <epoch>|<horizon, unix ms>   the marker: complete since the horizon, at the epoch
//	!warming              <token>                      a warm-up in progress
//
//	!prune                <fields>                      the size above which a claim prunes next
//
// An entry never gives way to an older one (merge: the larger created
// time wins, the same operation keeps its first stamp). The hash lives as
// long as its newest entry counts (its expiry moves forward only). Only a
// claim that writes an entry touches the hash: a replayed claim (its
// operation's entry already there, or a newer one) reads two fields and
// writes nothing, however large the index. A claim that writes and finds
// more fields than pruneAt and than !prune deletes the entries whose
// window ended and sets !prune to twice the fields left, so that a
// subject with many live entries is scanned once per doubling, not on
// every claim.

// RecentKey returns the key of subject's recent-intent index: recent:{<subject>}.
func RecentKey(subject string) string { return "recent:{" + subject + "}" }

// intentField is the index's field of one intent.
func intentField(scope, paramHash string) string { return scope + "|" + paramHash }

// Fields of the index that are not entries (an entry's field ends in
// "|<param_hash>", which these cannot).
const (
	markerField  = "!warm"
	warmingField = "!warming"
	pruneField   = "!prune"
)

// pruneAt is the number of fields above which a claim deletes the
// subject's entries whose window has ended.
const pruneAt = 256

// mergeLua defines merge(key, field, value): value (operation id, created,
// expires) replaces the field's entry unless that entry is newer, or is
// the same operation (a replayed claim keeps the first stamp); it answers
// whether it wrote.
const mergeLua = `
local function merge(key, field, value)
  local cur = redis.call('HGET', key, field)
  if cur then
    local op, created = string.match(cur, '^([^|]*)|(%d+)|')
    local newOp, newCreated = string.match(value, '^([^|]*)|(%d+)|')
    if op == newOp or (created and tonumber(created) > tonumber(newCreated)) then
      return false
    end
  end
  redis.call('HSET', key, field, value)
  return true
end
local function extend(key, ms)
  if redis.call('PTTL', key) < ms then
    redis.call('PEXPIRE', key, ms)
  end
end
`

// recordIntentScript records a claim's intent: merge; when the entry was
// written, let the hash live until its window ends and, above pruneAt
// fields and above !prune, delete the entries whose window has ended and
// set !prune to twice the fields left. A replayed claim writes nothing.
//
// KEYS[1] = recent:{<subject>}
// ARGV[1] = <scope>|<param_hash>
// ARGV[2] = <operation_id>|<created ms>|<expires ms>
// ARGV[3] = the entry's expiry, unix milliseconds
// ARGV[4] = now, unix milliseconds
// ARGV[5] = pruneAt
//
// Reply: the subject's marker (<epoch>|<horizon ms>), or nil when the
// index is not warm.
var recordIntentScript = redis.NewScript(mergeLua + `
local now = tonumber(ARGV[4])
if merge(KEYS[1], ARGV[1], ARGV[2]) then
  extend(KEYS[1], tonumber(ARGV[3]) - now)
  local limit = math.max(tonumber(ARGV[5]), tonumber(redis.call('HGET', KEYS[1], '` + pruneField + `') or 0))
  if redis.call('HLEN', KEYS[1]) > limit then
    local all = redis.call('HGETALL', KEYS[1])
    for i = 1, #all, 2 do
      local expires = string.match(all[i + 1], '|(%d+)$')
      if string.sub(all[i], 1, 1) ~= '!' and expires and tonumber(expires) < now then
        redis.call('HDEL', KEYS[1], all[i])
      end
    end
    redis.call('HSET', KEYS[1], '` + pruneField + `', 2 * redis.call('HLEN', KEYS[1]))
  end
end
return redis.call('HGET', KEYS[1], '` + markerField + `')
`)

// beginWarmScript marks a warm-up in progress; a hash it creates expires.
//
// KEYS[1] = recent:{<subject>}
// ARGV[1] = token
// ARGV[2] = TTL, milliseconds
//
// Reply: 'OK'.
var beginWarmScript = redis.NewScript(mergeLua + `
redis.call('HSET', KEYS[1], '` + warmingField + `', ARGV[1])
extend(KEYS[1], tonumber(ARGV[2]))
return 'OK'
`)

// commitWarmScript merges the truth's entries and writes the marker, only
// while the warm-up's token is still there: a FLUSHALL, a restart or an
// expiry since BeginWarm removed it, and with it entries of claims the
// truth may not have shown the warm-up.
//
// KEYS[1] = recent:{<subject>}
// ARGV[1] = token
// ARGV[2] = marker: <epoch>|<horizon ms>
// ARGV[3] = TTL, milliseconds
// ARGV[4], ARGV[5], ... = field, value of each entry
//
// Reply: 'OK' | 'ABORTED'.
var commitWarmScript = redis.NewScript(mergeLua + `
if redis.call('HGET', KEYS[1], '` + warmingField + `') ~= ARGV[1] then
  return 'ABORTED'
end
for i = 4, #ARGV, 2 do
  merge(KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('HSET', KEYS[1], '` + markerField + `', ARGV[2])
redis.call('HDEL', KEYS[1], '` + warmingField + `')
extend(KEYS[1], tonumber(ARGV[3]))
return 'OK'
`)

// intentStamp is when a claim of c counts as created for the index: now,
// but never after its fingerprint's exp (a claim after exp replays an
// operation first claimed before it), so never after the truth's created_at.
func intentStamp(c idemstore.Claim, now time.Time) time.Time {
	if !c.FingerprintExp.IsZero() && c.FingerprintExp.Before(now) {
		return c.FingerprintExp
	}
	return now
}

// entryValue encodes an entry's value.
func entryValue(opID string, created, expires time.Time) string {
	return opID + "|" + strconv.FormatInt(created.UnixMilli(), 10) + "|" + strconv.FormatInt(expires.UnixMilli(), 10)
}

// recordIntent is the recordIntentScript call of claim c at now.
func recordIntent(c idemstore.Claim, now time.Time) scriptCall {
	window := c.IntentWindow
	if window <= 0 {
		window = operation.DefaultIntentWindow
	}
	created := intentStamp(c, now)
	expires := created.Add(window)
	return scriptCall{script: recordIntentScript, keys: []string{RecentKey(c.Subject)}, args: []any{
		intentField(c.Scope, c.ParamHash), entryValue(c.OperationID, created, expires),
		expires.UnixMilli(), now.UnixMilli(), pruneAt,
	}}
}

// RecentIntent reads subject's marker and the entry of (scope, paramHash)
// with one HMGET.
func (s *Store) RecentIntent(ctx context.Context, subject, scope, paramHash string) (idemstore.IntentRead, error) {
	vals, err := s.rdb.HMGet(ctx, RecentKey(subject), markerField, intentField(scope, paramHash)).Result()
	if err != nil {
		return idemstore.IntentRead{}, fmt.Errorf("recent intent %s: %w", subject, interpretError(err))
	}
	read, err := decodeIntentRead(scope, paramHash, vals)
	if err != nil {
		return idemstore.IntentRead{}, fmt.Errorf("recent intent %s: %w", subject, err)
	}
	return read, nil
}

// decodeIntentRead turns HMGET's [marker, entry] into an IntentRead. A
// malformed entry is an error (the caller asks the truth), never "none".
func decodeIntentRead(scope, paramHash string, vals []any) (idemstore.IntentRead, error) {
	if len(vals) != 2 {
		return idemstore.IntentRead{}, fmt.Errorf("unexpected HMGET reply %v", vals)
	}
	var read idemstore.IntentRead
	if v, ok := vals[0].(string); ok {
		m, err := decodeMarker(v)
		if err != nil {
			return idemstore.IntentRead{}, err
		}
		read.Marker = m
	}
	if v, ok := vals[1].(string); ok {
		opID, rest, _ := strings.Cut(v, "|")
		created, _, ok := cutInts(rest)
		if !ok || opID == "" {
			return idemstore.IntentRead{}, fmt.Errorf("malformed entry %q", v)
		}
		read.Entry = &idemstore.IntentEntry{Scope: scope, ParamHash: paramHash, OperationID: opID, CreatedAt: time.UnixMilli(created)}
	}
	return read, nil
}

// decodeMarker parses a marker "<epoch>|<horizon ms>".
func decodeMarker(v string) (*idemstore.IndexMarker, error) {
	epoch, horizon, ok := cutInts(v)
	if !ok {
		return nil, fmt.Errorf("malformed marker %q", v)
	}
	return &idemstore.IndexMarker{Epoch: epoch, Horizon: time.UnixMilli(horizon)}, nil
}

// recordedMarker reads the record script's answer: the marker it found,
// nil when there is none or the answer is not one (a claim then warms a
// marker it could not read).
func recordedMarker(cmd *redis.Cmd) *idemstore.IndexMarker {
	v, err := cmd.Text()
	if err != nil {
		return nil
	}
	m, err := decodeMarker(v)
	if err != nil {
		return nil
	}
	return m
}

// cutInts parses "<int>|<int>".
func cutInts(s string) (a, b int64, ok bool) {
	x, y, found := strings.Cut(s, "|")
	a, errA := strconv.ParseInt(x, 10, 64)
	b, errB := strconv.ParseInt(y, 10, 64)
	return a, b, found && errA == nil && errB == nil
}

// BeginWarm writes a fresh token into subject's index (a hash it creates
// lives ttl) and returns it.
func (s *Store) BeginWarm(ctx context.Context, subject string, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", fmt.Errorf("begin warm %s: TTL must be positive, got %s", subject, ttl)
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	if err := beginWarmScript.Run(ctx, s.rdb, []string{RecentKey(subject)}, token, ttl.Milliseconds()).Err(); err != nil {
		return "", fmt.Errorf("begin warm %s: %w", subject, interpretError(err))
	}
	return token, nil
}

// CommitWarm merges p.Entries and writes p.Marker while the index still
// holds p.Token.
func (s *Store) CommitWarm(ctx context.Context, p idemstore.WarmParams) (bool, error) {
	if p.TTL <= 0 {
		return false, fmt.Errorf("commit warm %s: TTL must be positive, got %s", p.Subject, p.TTL)
	}
	args := make([]any, 0, 3+2*len(p.Entries))
	args = append(args, p.Token, strconv.FormatInt(p.Marker.Epoch, 10)+"|"+strconv.FormatInt(p.Marker.Horizon.UnixMilli(), 10),
		p.TTL.Milliseconds())
	for _, e := range p.Entries {
		args = append(args, intentField(e.Scope, e.ParamHash), entryValue(e.OperationID, e.CreatedAt, e.CreatedAt.Add(p.TTL)))
	}
	reply, err := commitWarmScript.Run(ctx, s.rdb, []string{RecentKey(p.Subject)}, args...).Text()
	if err != nil {
		return false, fmt.Errorf("commit warm %s: %w", p.Subject, interpretError(err))
	}
	return reply == "OK", nil
}

// scriptCall is one script to run in a pipeline, and its answer.
type scriptCall struct {
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
}

// runPipelined sends the calls in one round trip, each by EVALSHA (a
// cluster client sends each node its calls, the nodes in parallel); a call
// answered NOSCRIPT (the server's script cache was flushed or restarted)
// is sent again alone by Run, which loads its script.
func runPipelined(ctx context.Context, rdb redis.UniversalClient, calls ...*scriptCall) {
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range calls {
			c.cmd = c.script.EvalSha(ctx, p, c.keys, c.args...)
		}
		return nil
	})
	for _, c := range calls {
		if err := c.cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			c.cmd = c.script.Run(ctx, rdb, c.keys, c.args...)
		}
	}
}
