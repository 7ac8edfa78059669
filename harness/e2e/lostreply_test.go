package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	hist "github.com/oncegate/oncegate/harness/history"
	"github.com/oncegate/oncegate/harness/netfault"
	"github.com/oncegate/oncegate/harness/testenv"
)

// The lost-reply tests (each on a stack of its own, run in parallel with
// the other waiting tests): a Toxiproxy proxy on every hop of the stack
// (testenv.StackOptions.NetFaults) cuts the replies of one hop while one
// confirm crosses it — the request reached the server, the answer never
// came back — then heals it; an agent resends the same confirm until it
// knows the outcome. Each test checks the history of every answer, the
// downstream's executions and the truth's final record with the porcupine
// model of harness/history (no answer back from a terminal state, no
// completed before the single execution, no "not executed" for one that
// executed), and that the fault really happened.

// lossClient is an agent's HTTP client for the lost-reply tests: it tells
// an answer from a request that got none.
var lossClient = &http.Client{Timeout: 30 * time.Second}

// recorder sends an agent's requests and keeps every answer with the
// times it was sent and received, as history events.
type recorder struct {
	t *testing.T
	s *testenv.Stack
	// base is the gateway's URL as the agent reaches it (s.GatewayURL,
	// or s.AgentGatewayURL through the agents' own hop).
	base   string
	mu     sync.Mutex
	events []hist.Event
}

func newRecorder(t *testing.T, s *testenv.Stack) *recorder {
	return &recorder{t: t, s: s, base: s.GatewayURL}
}

// send sends one request as dev-alice and records its answer (none when
// the connection broke or timed out: ok false).
func (r *recorder) send(client int, kind, op, method, url string, body any) (answer, bool) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(r.t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	require.NoError(r.t, err)
	req.Header.Set("Authorization", "Bearer dev-alice")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	sent := time.Now()
	resp, err := lossClient.Do(req)
	if err != nil {
		r.t.Logf("%s of %s: no answer: %v", kind, op, err)
		return answer{}, false
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, false
	}
	a := answer{Code: resp.StatusCode, Header: resp.Header, Raw: raw}
	require.NoErrorf(r.t, json.Unmarshal(raw, &a.Body), "%s of %s: not JSON: %s", kind, op, raw)
	r.mu.Lock()
	r.events = append(r.events, hist.Event{Op: op, Client: client, Kind: kind, Call: sent.UnixNano(), Return: time.Now().UnixNano(),
		Status: a.str("status"), ResultRef: a.str("result_ref"), FailureKind: a.str("failure_kind")})
	r.mu.Unlock()
	r.t.Logf("%s of %s: %d %s %s", kind, op, a.Code, a.str("status"), a.str("failure_kind"))
	return a, true
}

func (r *recorder) confirm(client int, scope, fp, op string, params map[string]any) (answer, bool) {
	return r.send(client, hist.KindConfirm, op, http.MethodPost, r.base+"/v1/actions/"+scope+"/confirm",
		map[string]any{"fingerprint": fp, "params": params})
}

func (r *recorder) status(client int, op string) (answer, bool) {
	return r.send(client, hist.KindStatus, op, http.MethodGet, r.base+"/v1/operations/"+op, nil)
}

// finalStatuses end an agent's following of an operation.
var lossFinal = []string{"completed", "already_completed", "failed", "already_failed", "needs_manual_review"}

// follow is an agent that knows nothing yet: it resends the confirm every
// resend (and after every answer it did not get, or temporarily_unavailable)
// and asks the status tool in between, until a final status or within
// passes; it returns the final answer.
func (r *recorder) follow(client int, scope, fp, op string, params map[string]any, resend, within time.Duration) answer {
	deadline := time.Now().Add(within)
	var next time.Time
	for time.Now().Before(deadline) {
		var a answer
		var ok bool
		if !time.Now().Before(next) {
			next = time.Now().Add(resend)
			a, ok = r.confirm(client, scope, fp, op, params)
		} else {
			a, ok = r.status(client, op)
		}
		switch {
		case !ok || a.str("status") == "temporarily_unavailable" || a.str("status") == "unknown_operation":
			next = time.Time{}
		case slices.Contains(lossFinal, a.str("status")):
			return a
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.t.Fatalf("operation %s not final within %s", op, within)
	return answer{}
}

// check adds the downstream's executions and the truth's final records of
// ops to the history and judges it; a violation prints each illegal
// operation's history.
func (r *recorder) check(ops ...string) {
	r.t.Helper()
	ctx := context.Background()
	sim, err := pgxpool.New(ctx, r.s.SimulatorDatabaseURL)
	require.NoError(r.t, err)
	defer sim.Close()
	truth, err := pgxpool.New(ctx, r.s.DatabaseURL)
	require.NoError(r.t, err)
	defer truth.Close()
	execs, err := hist.Executions(ctx, sim, ops)
	require.NoError(r.t, err)
	finals, err := hist.Finals(ctx, truth, ops, time.Now())
	require.NoError(r.t, err)
	r.mu.Lock()
	events := append(append(slices.Clone(r.events), execs...), finals...)
	r.mu.Unlock()
	res := hist.Check(events, 0)
	var b strings.Builder
	for _, op := range res.Illegal {
		b.WriteString("operation " + op + ":\n" + res.Describe(op))
	}
	require.Truef(r.t, res.Ok(), "the history is not linearizable (unknown: %v):\n%s", res.Unknown, b.String())
	for _, op := range ops {
		r.t.Logf("history of %s:\n%s", op, res.Describe(op))
	}
}

// cutWhile cuts every reply on hop while do runs, then heals the hop.
func cutWhile(t *testing.T, s *testenv.Stack, hop string, do func()) {
	t.Helper()
	h, err := s.Net.Hop(hop)
	require.NoError(t, err)
	name, err := h.CutReplies(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, h.Remove(name)) }()
	do()
}

// gatewayLogged waits a moment for the gateway's log to say want.
func gatewayLogged(s *testenv.Stack, want string) bool {
	return logged(s.Gateway, want, 10*time.Second)
}

// healAfterExecution waits until the downstream executed op, gives its
// (cut) reply a moment to be lost, takes the cut off the hop — so that
// what follows, the status queries, get through — and checks that the
// worker did lose the reply.
func healAfterExecution(t *testing.T, s *testenv.Stack, h *netfault.Hop, name, op string) {
	t.Helper()
	waitExecutions(t, s, op, 1)
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, h.Remove(name))
	require.True(t, workerLogged(s, "execute: outcome unknown"), "the worker lost the downstream's reply")
}

// workerLogged waits a moment for the worker's log to say want.
func workerLogged(s *testenv.Stack, want string) bool { return logged(s.Worker, want, 20*time.Second) }

// logged waits up to within for p's whole log to say want.
func logged(p *testenv.Process, want string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(p.LogPath); err == nil && strings.Contains(string(b), want) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// truthRecord is the operation's write_record state and owner ("" when absent).
func truthRecord(t *testing.T, s *testenv.Stack, op string) (state, owner string) {
	t.Helper()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, s.DatabaseURL)
	require.NoError(t, err)
	defer pool.Close()
	err = pool.QueryRow(ctx, `SELECT state, owner FROM write_record WHERE idem_key = $1`, op).Scan(&state, &owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", ""
	}
	require.NoError(t, err)
	return state, owner
}

// redisRecord is the operation's idem:{<id>} hash's state and owner ("" when absent).
func redisRecord(t *testing.T, s *testenv.Stack, op string) (state, owner string) {
	t.Helper()
	rdb := s.Redis.Client()
	defer rdb.Close()
	h, err := rdb.HGetAll(context.Background(), "idem:{"+op+"}").Result()
	require.NoError(t, err)
	return h["state"], h["owner"]
}

// mirrored waits until Redis holds the truth's terminal record of op (the
// fast path mirrors the truth) and fails with both when it does not.
func mirrored(t *testing.T, s *testenv.Stack, op string, within time.Duration) {
	t.Helper()
	var ts, to, rs, ro string
	err := testenv.WaitFor(context.Background(), within, func(context.Context) error {
		ts, to = truthRecord(t, s, op)
		rs, ro = redisRecord(t, s, op)
		if ts == "" || ts == "IN_FLIGHT" || rs != ts || ro != to {
			return errors.New("not mirrored")
		}
		return nil
	})
	require.NoErrorf(t, err, "the fast path does not mirror the truth: truth %s (owner %s), Redis %s (owner %s)", ts, to, rs, ro)
}

// warmUp runs one operation to its end on a healthy stack, so that the
// processes hold open connections on every hop and Redis has the scripts
// loaded: a cut then falls on an established connection, after the
// request reached the server (a new connection's handshake would be cut
// first, and the request never sent).
func warmUp(t *testing.T, s *testenv.Stack, scope string) {
	t.Helper()
	params := transferParams("1.00")
	params["payee_id"] = "p-warm-up-" + randomHex(4)
	fp, op := previewOK(t, s, "dev-alice", scope, params)
	final := newRecorder(t, s).follow(9, scope, fp, op, params, 2*time.Second, 60*time.Second)
	require.Equal(t, "completed", final.str("status"), final.String())
}

// lostReplyParams are params of its own for one test.
func lostReplyParams(name string) map[string]any {
	p := transferParams("31.00")
	p["payee_id"] = "p-lost-" + name + "-" + randomHex(4)
	return p
}

// requireCompleted checks the last answer, the single execution and the
// history.
func requireCompleted(t *testing.T, s *testenv.Stack, r *recorder, op string, final answer) {
	t.Helper()
	require.Equal(t, "completed", strings.TrimPrefix(final.str("status"), "already_"), final.String())
	require.Equal(t, 1, executions(t, s, op), "executed exactly once downstream")
	r.check(op)
}

// TestLostReplyClaim: the Redis reply to the confirm's claim (the acquire
// script, pipelined with the recent-intent index's) is cut after the
// script ran. The gateway cannot tell whether it holds the claim: it
// degrades to the truth alone and claims there under the same owner, so
// that the claim Redis kept is the truth's, and the workflow's finalize
// (owner-checked) completes it on both. The same confirm, resent, neither
// runs twice nor tells anything the history cannot explain.
func TestLostReplyClaim(t *testing.T) {
	t.Parallel()
	s := testenv.StartStack(t, testenv.StackOptions{NetFaults: true})
	warmUp(t, s, "payments.legacy_transfer")
	r := newRecorder(t, s)
	params := lostReplyParams("claim")
	fp, op := previewOK(t, s, "dev-alice", "payments.legacy_transfer", params)
	cutWhile(t, s, netfault.GatewayRedis, func() {
		r.confirm(0, "payments.legacy_transfer", fp, op, params)
	})
	require.True(t, gatewayLogged(s, "idempotency store degraded"), "the gateway lost Redis's reply")
	_, owner := redisRecord(t, s, op)
	require.NotEmpty(t, owner, "the claim script ran on Redis: its reply was what was lost")
	_, truthOwner := truthRecord(t, s, op)
	require.Equal(t, owner, truthOwner, "the truth's claim is the one Redis kept: the same owner")
	// Before any resend: the workflow's finalize completed the claim Redis
	// kept (no second claim, no refill needed).
	mirrored(t, s, op, 30*time.Second)
	final := r.follow(0, "payments.legacy_transfer", fp, op, params, 2*time.Second, 60*time.Second)
	requireCompleted(t, s, r, op, final)
}

// TestLostReplyConfirmAnswer: the gateway's answer to a confirm is cut on
// the agent's own hop (agents->gateway) after the gateway took the
// confirm: the agent cannot tell whether its confirm was taken, and sends
// it again once the operation ran. The resend is answered as a replay
// (already_completed, Idempotent-Replayed: true) with the one result; the
// downstream executed it once.
func TestLostReplyConfirmAnswer(t *testing.T) {
	t.Parallel()
	const scope = "payments.legacy_transfer"
	s := testenv.StartStack(t, testenv.StackOptions{NetFaults: true})
	warmUp(t, s, scope)
	r := newRecorder(t, s)
	r.base = s.AgentGatewayURL
	params := lostReplyParams("answer")
	fp, op := previewOK(t, s, "dev-alice", scope, params)
	answered := true
	cutWhile(t, s, netfault.AgentsGateway, func() {
		_, answered = r.confirm(0, scope, fp, op, params)
	})
	require.False(t, answered, "the gateway's answer to the confirm was cut on the agents' hop")
	state, _ := truthRecord(t, s, op)
	require.NotEmpty(t, state, "the confirm reached the gateway: the truth holds its claim")
	waitExecutions(t, s, op, 1)
	require.NoError(t, testenv.WaitFor(context.Background(), 30*time.Second, func(context.Context) error {
		if st, _ := truthRecord(t, s, op); st != "DONE" {
			return errors.New("truth record " + st)
		}
		return nil
	}))
	again, ok := r.confirm(0, scope, fp, op, params)
	require.True(t, ok, "the hop healed: the resend is answered")
	require.Equal(t, "already_completed", again.str("status"), again.String())
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"), "the resend is a replay: %s", again)
	require.Equal(t, transferRef(t, s, op), again.str("result_ref"), "the one transfer that ran")
	require.Equal(t, 1, executions(t, s, op), "executed exactly once downstream")
	r.check(op)
}

// TestLostReplyCommit: the reply to the truth's claim (the insert of
// claim_operation, which commits by itself) is cut after PostgreSQL
// committed it. The gateway gives its Redis claim back and answers
// temporarily_unavailable; the truth holds an IN_FLIGHT claim without a
// workflow. The resent confirm finds it (a unique-key collision is an
// answer, never an error), waits the claim grace and takes the orphan
// over: one workflow, one execution.
func TestLostReplyCommit(t *testing.T) {
	t.Parallel()
	s := testenv.StartStack(t, testenv.StackOptions{NetFaults: true, ExtraGatewayEnv: []string{"ONCEGATE_CLAIM_GRACE=2s"}})
	warmUp(t, s, "payments.legacy_transfer")
	r := newRecorder(t, s)
	params := lostReplyParams("commit")
	fp, op := previewOK(t, s, "dev-alice", "payments.legacy_transfer", params)
	var first answer
	cutWhile(t, s, netfault.GatewayPostgres, func() {
		first, _ = r.confirm(0, "payments.legacy_transfer", fp, op, params)
	})
	require.Equal(t, "temporarily_unavailable", first.str("status"), "the claim's reply was lost: %s", first)
	state, firstOwner := truthRecord(t, s, op)
	require.Equal(t, "IN_FLIGHT", state, "the claim was committed: only its reply was lost")
	final := r.follow(0, "payments.legacy_transfer", fp, op, params, 2*time.Second, 60*time.Second)
	requireCompleted(t, s, r, op, final)
	_, owner := truthRecord(t, s, op)
	require.NotEqual(t, firstOwner, owner, "the orphaned claim was taken over")
	mirrored(t, s, op, 10*time.Second)
}

// TestLostReplyWorkflowStart: the reply to the workflow's start is cut
// after Temporal started it, for longer than the gateway's start timeout.
// The gateway cannot tell whether the workflow runs: it keeps its claim
// (it gives it back only when Temporal says no workflow of the ID exists)
// and answers temporarily_unavailable; the workflow (held meanwhile: the
// worker's replies from Temporal are cut too), whose ID is the
// operation's, runs and completes it; the resent confirm attaches to it.
func TestLostReplyWorkflowStart(t *testing.T) {
	t.Parallel()
	s := testenv.StartStack(t, testenv.StackOptions{NetFaults: true})
	warmUp(t, s, "payments.legacy_transfer")
	r := newRecorder(t, s)
	params := lostReplyParams("start")
	fp, op := previewOK(t, s, "dev-alice", "payments.legacy_transfer", params)
	var first answer
	// The worker's replies from Temporal are cut too, so that the workflow
	// is still running (not yet run) when the gateway gives up on its start.
	cutWhile(t, s, netfault.WorkerTemporal, func() {
		cutWhile(t, s, netfault.GatewayTemporal, func() {
			first, _ = r.confirm(0, "payments.legacy_transfer", fp, op, params)
		})
	})
	require.Equal(t, "temporarily_unavailable", first.str("status"), "the start's reply was lost: %s", first)
	final := r.follow(0, "payments.legacy_transfer", fp, op, params, 2*time.Second, 60*time.Second)
	requireCompleted(t, s, r, op, final)
	mirrored(t, s, op, 10*time.Second)
}

// TestLostReplyDownstream: the downstream's reply to the execute call of a
// downstream that ignores Idempotency-Key (payments.legacy_transfer) is
// cut after it committed the transfer. The worker never sends it again
// blindly: it reconciles through the status endpoint, finds the transfer
// and completes the operation with it.
func TestLostReplyDownstream(t *testing.T) {
	t.Parallel()
	s := testenv.StartStack(t, testenv.StackOptions{NetFaults: true})
	warmUp(t, s, "payments.legacy_transfer")
	r := newRecorder(t, s)
	params := lostReplyParams("downstream")
	fp, op := previewOK(t, s, "dev-alice", "payments.legacy_transfer", params)
	h, err := s.Net.Hop(netfault.WorkerDownstream)
	require.NoError(t, err)
	name, err := h.CutReplies(0)
	require.NoError(t, err)
	r.confirm(0, "payments.legacy_transfer", fp, op, params)
	healAfterExecution(t, s, h, name, op)
	final := r.follow(0, "payments.legacy_transfer", fp, op, params, 2*time.Second, 90*time.Second)
	requireCompleted(t, s, r, op, final)
	require.Equal(t, transferRef(t, s, op), final.str("result_ref"), "the reconciled transfer is the one that ran")
}

// legacyLagged is payments.legacy_transfer with a 3 s processing window
// and a declared status lag of 8 s: a status query sees a commit up to 8 s
// after it happened.
const legacyLagged = "payments.legacy_transfer_lagged"

// TestLostReplyDownstreamStatusLags: as above, and the downstream's status
// endpoint sees the commit 7.5 s late (within the 8 s the action
// declares), so that the status queries of the first seconds find nothing. "Not found" before the
// processing window and the lag have passed proves nothing: the operation
// stays in flight, is asked again and completes; it is never failed as
// not_executed.
func TestLostReplyDownstreamStatusLags(t *testing.T) {
	t.Parallel()
	cat := catalogWith(t, map[string]derivation{legacyLagged: {from: "payments.legacy_transfer", change: func(d map[string]any) {
		d["max_processing_time"] = "3s"
		d["status_lag"] = "8s"
		d["reconcile_delay"] = "1s"
	}}})
	s := testenv.StartStack(t, testenv.StackOptions{NetFaults: true, Catalog: cat})
	warmUp(t, s, legacyLagged)
	r := newRecorder(t, s)
	params := lostReplyParams("lagged")
	fp, op := previewOK(t, s, "dev-alice", legacyLagged, params)
	setFaults(t, s, map[string]any{"status_lag_ms": 7500})
	h, err := s.Net.Hop(netfault.WorkerDownstream)
	require.NoError(t, err)
	name, err := h.CutReplies(0)
	require.NoError(t, err)
	r.confirm(0, legacyLagged, fp, op, params)
	healAfterExecution(t, s, h, name, op)
	final := r.follow(0, legacyLagged, fp, op, params, 2*time.Second, 90*time.Second)
	clearFaults(t, s)
	requireCompleted(t, s, r, op, final)
	require.True(t, workerLogged(s, "reconcile: not found"), "a status query came before the commit showed")
}

// pgPingReply is the size in bytes of PostgreSQL's reply to the liveness
// ping pgxpool sends on a connection idle for more than a second before it
// hands it out (the empty query "-- ping": EmptyQueryResponse, 5 bytes,
// and ReadyForQuery, 6 bytes).
const pgPingReply = 11

// finalizeAttempts bounds the operations TestLostReplyFinalize runs until
// the cut falls on the finalize's own reply.
const finalizeAttempts = 4

// TestLostReplyFinalize: the reply to the truth's finalize (the UPDATE
// that records DONE, made by the Execute activity the moment the
// downstream answered) is cut after PostgreSQL committed it. The activity
// leaves the outcome to the workflow's finalize, which finds the same
// outcome in the truth (idempotent), writes it to Redis and completes.
//
// The cut takes the first reply past pgPingReply bytes on the worker's
// connection to PostgreSQL, and the finalize is not always the first
// round trip there: a connection on which the statement was never run
// prepares it first, and that reply is the one lost (the UPDATE is then
// never sent, and the workflow's finalize records the outcome). Such an
// operation must still complete exactly once; the test then runs another,
// until the truth shows the committed finalize whose reply was lost.
func TestLostReplyFinalize(t *testing.T) {
	t.Parallel()
	s := testenv.StartStack(t, testenv.StackOptions{NetFaults: true})
	warmUp(t, s, "payments.transfer")
	h, err := s.Net.Hop(netfault.WorkerPostgres)
	require.NoError(t, err)
	for i := range finalizeAttempts {
		if loseFinalizeReply(t, s, h, i) {
			return
		}
		t.Logf("attempt %d: the cut took a reply before the finalize's (the statement's prepare): the finalize never reached PostgreSQL", i+1)
	}
	t.Fatalf("in %d operations the cut never fell on a committed finalize's reply", finalizeAttempts)
}

// loseFinalizeReply runs one operation whose Execute activity's finalize
// loses its reply on h, checks that it completes exactly once, and says
// whether the finalize had been committed (only its reply lost).
func loseFinalizeReply(t *testing.T, s *testenv.Stack, h *netfault.Hop, attempt int) bool {
	t.Helper()
	r := newRecorder(t, s)
	params := lostReplyParams("finalize-" + strconv.Itoa(attempt))
	fp, op := previewOK(t, s, "dev-alice", "payments.transfer", params)
	// The downstream holds its answer a moment: the cut is set while the
	// worker waits for it, so the next reply the worker's PostgreSQL hop
	// carries (past the pool's ping of a connection idle that long) is the
	// finalize's.
	setFaults(t, s, map[string]any{"hang_after_commit_ms": 1500})
	confirmed := make(chan struct{})
	go func() {
		defer close(confirmed)
		r.confirm(attempt, "payments.transfer", fp, op, params)
	}()
	waitExecutions(t, s, op, 1)
	name, err := h.CutReplies(pgPingReply)
	require.NoError(t, err)
	require.True(t, workerLoggedFor(s, op, "execute: the outcome is left to the workflow's finalize"), "the finalize's reply was lost")
	require.NoError(t, h.Remove(name))
	<-confirmed
	clearFaults(t, s)
	state, _ := truthRecord(t, s, op)
	mirrored(t, s, op, 30*time.Second)
	final := r.follow(attempt, "payments.transfer", fp, op, params, 2*time.Second, 60*time.Second)
	requireCompleted(t, s, r, op, final)
	return state == "DONE"
}

// workerLoggedFor waits a moment for a line of the worker's log about the
// operation op to say want.
func workerLoggedFor(s *testenv.Stack, op, want string) bool {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(s.Worker.LogPath)
		if err == nil && slices.ContainsFunc(strings.Split(string(b), "\n"), func(line string) bool {
			return strings.Contains(line, want) && strings.Contains(line, `"operation_id":"`+op+`"`)
		}) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// TestPartitionDuringTakeover: a gateway dies right after its claim (an
// orphan: Redis and the truth hold it, no workflow runs); the gateway
// that comes back is partitioned from Redis, so the resent confirm takes
// the orphan over on the truth alone; the partition heals while the
// taken-over workflow runs. Redis still names the dead owner: the
// takeover's workflow cannot finalize it there, and the next confirm
// refills it from the truth. One execution; every answer explained.
func TestPartitionDuringTakeover(t *testing.T) {
	t.Parallel()
	s := testenv.StartStack(t, testenv.StackOptions{NetFaults: true, ExtraGatewayEnv: []string{"ONCEGATE_FAILPOINT=after_claim"}})
	r := newRecorder(t, s)
	params := lostReplyParams("takeover")
	fp, op := previewOK(t, s, "dev-alice", "payments.legacy_transfer", params)
	_, ok := r.confirm(0, "payments.legacy_transfer", fp, op, params)
	require.False(t, ok, "the gateway died after its claim, without an answer")
	require.NoError(t, testenv.WaitFor(context.Background(), 10*time.Second, func(context.Context) error {
		if s.Gateway.Running() {
			return errors.New("still running")
		}
		return nil
	}))
	_, dead := redisRecord(t, s, op)
	require.NotEmpty(t, dead, "the orphan's claim is on Redis")
	hop, err := s.Net.Hop(netfault.GatewayRedis)
	require.NoError(t, err)
	names, err := hop.Partition("partition")
	require.NoError(t, err)
	s.RestartGatewayWith(t, []string{"ONCEGATE_CLAIM_GRACE=1s"})
	time.Sleep(time.Second) // past the grace
	healed := make(chan struct{})
	go func() {
		defer close(healed)
		gatewayLogged(s, "took over orphaned claim")
		for _, n := range names {
			_ = hop.Remove(n)
		}
	}()
	r.confirm(0, "payments.legacy_transfer", fp, op, params)
	<-healed
	require.Empty(t, hop.Toxics(), "healed")
	require.True(t, gatewayLogged(s, "took over orphaned claim"), "the takeover happened during the partition")
	final := r.follow(0, "payments.legacy_transfer", fp, op, params, 2*time.Second, 60*time.Second)
	requireCompleted(t, s, r, op, final)
	_, owner := truthRecord(t, s, op)
	require.NotEqual(t, dead, owner, "the truth names the takeover's owner")
	// Redis, cut off during the takeover, still holds the dead owner's
	// claim (the workflow's finalize is refused there: NOT_OWNER); a
	// stale IN_FLIGHT that every reader checks against the truth — never
	// another outcome.
	state, redisOwner := redisRecord(t, s, op)
	require.Contains(t, []string{"IN_FLIGHT", "DONE"}, state)
	if state == "IN_FLIGHT" {
		require.Equal(t, dead, redisOwner, "only the dead owner's claim may be left stale")
	}
}
