package soak

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	oncegate "github.com/oncegate/oncegate/client"
	"github.com/oncegate/oncegate/idemstore/redisstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/plan"
	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/workflows"
)

// Checks, as violations name them.
const (
	// checkExecutions: downstream executions ≤ 1 per operation, exactly 1
	// for a completed one, 0 for a failed one and for one never claimed.
	checkExecutions = "executions"
	// checkSettled: every operation terminal (or resolved from manual
	// review) within the settle bound.
	checkSettled = "settled"
	// checkRedis: the Redis hash, where the key exists, agrees with the truth.
	checkRedis = "truth_vs_redis"
	// checkTemporal: the workflow's result and IdemState agree with the truth.
	checkTemporal = "truth_vs_temporal"
	// checkAnswer: every answer an agent received is a contract answer
	// consistent with the final outcome.
	checkAnswer = "answers"
	// checkAmnesia: the amnesia guard flagged every repeat and refused the
	// unacknowledged ones.
	checkAmnesia = "amnesia_guard"
	// checkHealed: every network fault removed when the faults end; after
	// the run no proxy is left and nothing listens on a port it opened.
	checkHealed = "healed"
	// checkHistory: every operation's answers, executions and final
	// record linearize against the model of harness/history.
	checkHistory = "history"
)

// Violation is one broken expectation.
type Violation struct {
	// OperationID is the operation concerned, when there is one.
	OperationID string `json:"operation_id,omitempty"`
	// Check is which check failed.
	Check string `json:"check"`
	// Detail says what was found and what was expected.
	Detail string `json:"detail"`
}

// violation builds a Violation.
func violation(id, check, format string, args ...any) Violation {
	return Violation{OperationID: id, Check: check, Detail: fmt.Sprintf(format, args...)}
}

// truthRow is an operation's write_record row.
type truthRow struct {
	state, paramHash, resultRef, failureKind, resolvedBy string
}

// readTruth reads every write_record row created at or after since.
func readTruth(ctx context.Context, pool *pgxpool.Pool, since time.Time) (map[string]truthRow, error) {
	rows, err := pool.Query(ctx, `SELECT idem_key, state, param_hash, result_ref, failure_kind, resolved_by FROM write_record
		WHERE created_at >= $1`, since)
	if err != nil {
		return nil, fmt.Errorf("read write_record: %w", err)
	}
	defer rows.Close()
	out := map[string]truthRow{}
	for rows.Next() {
		var id string
		var r truthRow
		if err := rows.Scan(&id, &r.state, &r.paramHash, &r.resultRef, &r.failureKind, &r.resolvedBy); err != nil {
			return nil, fmt.Errorf("read write_record: %w", err)
		}
		out[id] = r
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read write_record: %w", err)
	}
	return out, nil
}

// temporalView is what Temporal says of an operation's workflow.
type temporalView struct {
	found     bool
	status    enums.WorkflowExecutionStatus
	idemState string
	result    operation.Final
	resultErr error
}

// readTemporal describes the workflow of id and, when it completed, reads its result.
func readTemporal(ctx context.Context, tc temporalclient.Client, id string) (temporalView, error) {
	desc, err := tc.DescribeWorkflowExecution(ctx, id, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return temporalView{}, nil
	}
	if err != nil {
		return temporalView{}, fmt.Errorf("describe workflow %s: %w", id, err)
	}
	v := temporalView{found: true, status: desc.GetWorkflowExecutionInfo().GetStatus()}
	if p, ok := desc.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[workflows.SearchAttrState]; ok {
		if err := converter.GetDefaultDataConverter().FromPayload(p, &v.idemState); err != nil {
			return v, fmt.Errorf("decode IdemState of %s: %w", id, err)
		}
	}
	if v.status == enums.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		v.resultErr = tc.GetWorkflow(ctx, id, "").Get(ctx, &v.result)
	}
	return v, nil
}

// redisView is an operation's idem:{<nonce>} hash, decoded.
type redisView struct {
	found                   bool
	state, paramHash, owner string
	resultRef               string
}

// readRedis reads the hash of id.
func readRedis(ctx context.Context, rdb redis.Cmdable, id string) (redisView, error) {
	h, err := rdb.HGetAll(ctx, redisstore.Key(id)).Result()
	if err != nil {
		return redisView{}, fmt.Errorf("read %s: %w", redisstore.Key(id), err)
	}
	if len(h) == 0 {
		return redisView{}, nil
	}
	v := redisView{found: true, state: h["state"], paramHash: h["param_hash"], owner: h["owner"]}
	if blob := h["result"]; blob != "" {
		var b struct {
			ResultRef string `json:"result_ref"`
		}
		if err := json.Unmarshal([]byte(blob), &b); err != nil {
			return v, fmt.Errorf("decode the result of %s: %w", redisstore.Key(id), err)
		}
		v.resultRef = b.ResultRef
	}
	return v, nil
}

// evidence is what the audit read about one operation.
type evidence struct {
	op         *opRecord
	executions int
	// transferID is the id of the downstream's record of the operation
	// (read when it executed).
	transferID string
	// verdict is, for a downstream that reports a business state, what its
	// record says: succeeded, failed or pending (empty otherwise).
	verdict  string
	truth    truthRow
	inTruth  bool
	redis    redisView
	temporal temporalView
}

// expectedStatuses are the only statuses a confirm or a status query of
// the agents may get: they send valid, unchanged requests of their own
// subject within the fingerprint's lifetime, so param_mismatch,
// fingerprint_expired, internal_error and the like are violations.
var expectedStatuses = []string{
	"completed", "already_completed", "failed", "already_failed", "in_progress", "needs_manual_review",
	"repeat_unacknowledged", "temporarily_unavailable", "unknown_operation",
}

// checkOperation applies every per-operation check to what was read.
func checkOperation(e evidence) []Violation {
	var out []Violation
	id := e.op.ID
	add := func(check, format string, args ...any) { out = append(out, violation(id, check, format, args...)) }
	// Executions, and the record that ran is the one the truth names. A
	// downstream that reports a business state may hold a record of a
	// FAILED operation, one whose own state says failed (a payout to a
	// closed account): nothing moved.
	switch {
	case e.executions > 1:
		add(checkExecutions, "executed %d times downstream, want at most 1", e.executions)
	case !e.inTruth && e.executions != 0:
		add(checkExecutions, "executed %d times downstream without a truth record", e.executions)
	case e.truth.state == string(operation.StateDone) && e.executions != 1:
		add(checkExecutions, "DONE in the truth but executed %d times downstream, want 1", e.executions)
	case e.truth.state == string(operation.StateFailed) && e.executions != 0 && e.verdict != verdictFailed:
		add(checkExecutions, "FAILED (%s) in the truth but executed %d times downstream, want 0", e.truth.failureKind, e.executions)
	case e.truth.state == string(operation.StateDone) && e.transferID != e.truth.resultRef:
		add(checkExecutions, "DONE with result_ref %q but the downstream's record is %q", e.truth.resultRef, e.transferID)
	case e.truth.state == string(operation.StateDone) && e.verdict != "" && e.verdict != verdictSucceeded:
		add(checkExecutions, "DONE in the truth but the downstream's record says %s", e.verdict)
	}
	if e.op.Intent == intentUnacknowledgedRepeat && e.inTruth {
		add(checkAmnesia, "an unacknowledged repeat of %s has a truth record (%s); it must never run", e.op.RepeatOf, e.truth.state)
	}
	// Settled.
	if e.inTruth && !operation.State(e.truth.state).Terminal() {
		add(checkSettled, "still %s in the truth after the settle bound and the audit's resolutions", e.truth.state)
	}
	out = append(out, checkRedisView(e)...)
	out = append(out, checkTemporalView(e)...)
	out = append(out, checkAnswers(e)...)
	return out
}

// checkRedisView compares the Redis hash with the truth. A hash still
// IN_FLIGHT while the truth is terminal is a stale fast path, not a
// violation: every reader of an IN_FLIGHT hash asks the truth, and the
// next acquire refills it (staleRedis counts them).
func checkRedisView(e evidence) []Violation {
	if !e.redis.found {
		return nil
	}
	var out []Violation
	add := func(format string, args ...any) { out = append(out, violation(e.op.ID, checkRedis, format, args...)) }
	if !e.inTruth {
		if e.redis.state != string(operation.StateInFlight) {
			add("the hash says %s but the truth has no record", e.redis.state)
		}
		return out
	}
	if e.redis.paramHash != e.truth.paramHash {
		add("param_hash %q in the hash, %q in the truth", e.redis.paramHash, e.truth.paramHash)
	}
	if e.redis.state != string(operation.StateInFlight) {
		if e.redis.state != e.truth.state {
			add("state %s in the hash, %s in the truth", e.redis.state, e.truth.state)
		} else if e.redis.resultRef != e.truth.resultRef {
			add("result_ref %q in the hash, %q in the truth", e.redis.resultRef, e.truth.resultRef)
		}
	}
	return out
}

// staleRedis reports a hash still IN_FLIGHT while the truth is terminal.
func staleRedis(e evidence) bool {
	return e.redis.found && e.inTruth && e.redis.state == string(operation.StateInFlight) &&
		operation.State(e.truth.state).Terminal()
}

// checkTemporalView compares the workflow with the truth: every truth
// record has its workflow (only the workflow writes a claim's outcome), a
// terminal one has completed with the same state and result_ref, and its
// IdemState search attribute says the same.
func checkTemporalView(e evidence) []Violation {
	var out []Violation
	add := func(format string, args ...any) {
		out = append(out, violation(e.op.ID, checkTemporal, format, args...))
	}
	t := e.temporal
	switch {
	case !e.inTruth:
		if t.found {
			add("a workflow exists (%s) but the truth has no record", t.status)
		}
		return out
	case !t.found:
		add("the truth says %s but Temporal has no workflow of this id", e.truth.state)
		return out
	case !operation.State(e.truth.state).Terminal():
		return out // reported by checkSettled
	case t.status != enums.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		add("the truth says %s but the workflow is %s", e.truth.state, t.status)
		return out
	case t.resultErr != nil:
		add("the workflow's result cannot be read: %v", t.resultErr)
		return out
	}
	if string(t.result.State) != e.truth.state {
		add("the workflow returned %s, the truth says %s", t.result.State, e.truth.state)
	} else if t.result.ResultRef != e.truth.resultRef {
		add("the workflow returned result_ref %q, the truth has %q", t.result.ResultRef, e.truth.resultRef)
	}
	if t.idemState != e.truth.state {
		add("IdemState is %q, the truth says %s", t.idemState, e.truth.state)
	}
	return out
}

// checkAnswers checks every answer the agents got about the operation
// against its final outcome.
func checkAnswers(e evidence) []Violation {
	var out []Violation
	add := func(s seen, format string, args ...any) {
		out = append(out, violation(e.op.ID, checkAnswer, "%s answer %s (HTTP %d) at %s: %s", s.Request, s.Status, s.Code,
			s.At.Format("15:04:05.000"), fmt.Sprintf(format, args...)))
	}
	known := false // an answer said the operation exists
	for _, s := range e.op.Answers {
		switch {
		case succeeded(s.Status):
			if e.truth.state != string(operation.StateDone) {
				add(s, "the operation ended %q", e.truth.state)
			} else if s.ResultRef != e.truth.resultRef {
				add(s, "result_ref %q, the final one is %q", s.ResultRef, e.truth.resultRef)
			}
		case s.Status == "failed" || s.Status == "already_failed":
			if e.truth.state != string(operation.StateFailed) {
				add(s, "the operation ended %q", e.truth.state)
			} else if s.FailureKind != "" && s.FailureKind != e.truth.failureKind {
				add(s, "failure_kind %q, the final one is %q", s.FailureKind, e.truth.failureKind)
			}
		case s.Status == "repeat_unacknowledged":
			if e.op.Intent != intentUnacknowledgedRepeat {
				add(s, "the confirm was not an unacknowledged repeat (intent %s)", e.op.Intent)
			}
		case s.Status == "unknown_operation":
			if known {
				add(s, "an earlier answer said the operation exists")
			}
		case s.Request != "preview" && !slices.Contains(expectedStatuses, s.Status):
			add(s, "the agent sent a valid, unchanged request of its own")
		}
		if e.op.Intent == intentUnacknowledgedRepeat && s.Request != "preview" &&
			s.Status != "repeat_unacknowledged" && s.Status != "temporarily_unavailable" {
			add(s, "an unacknowledged repeat must be refused with repeat_unacknowledged")
		}
		if s.Status == "in_progress" || s.Status == "needs_manual_review" || slices.Contains(finalStatuses, s.Status) {
			known = true
		}
	}
	return out
}

// Verdicts of a downstream that reports a business state.
const (
	verdictSucceeded = "succeeded"
	verdictFailed    = "failed"
	verdictPending   = "pending"
)

// verdictOf reads the business state of a downstream record as action
// declares it; empty when the action's downstream reports none.
func verdictOf(action *catalog.Action, record map[string]any) string {
	bs := action.Downstream.BusinessState
	if bs == nil {
		return ""
	}
	var v any = record
	for part := range strings.SplitSeq(bs.Field, ".") {
		m, _ := v.(map[string]any)
		v = m[part]
	}
	state, _ := v.(string)
	switch {
	case slices.Contains(bs.Succeeded, state):
		return verdictSucceeded
	case slices.Contains(bs.Failed, state):
		return verdictFailed
	default:
		return verdictPending
	}
}

// resolveReview decides an operation waiting in manual review through the
// ops API, as an operator with the simulator's evidence would: executed →
// completed with the downstream's record (failed when that record's own
// business state says so), otherwise failed.
func resolveReview(ctx context.Context, c *client, sim *pgxpool.Pool, action *catalog.Action, id, opsToken string) (string, error) {
	n, err := c.executions(ctx, id)
	if err != nil {
		return "", err
	}
	decision := oncegate.Resolution{Outcome: oncegate.OutcomeFailed, Reason: "soak audit: the downstream has no execution of it",
		Note: "decided by the soak audit from GET /_sim/executions"}
	if n > 0 {
		record, err := recordOf(ctx, c, sim, action, id)
		if err != nil {
			return "", err
		}
		switch verdictOf(action, record) {
		case verdictPending:
			return "", fmt.Errorf("resolve %s: the downstream's record is still pending", id)
		case verdictFailed:
			decision = oncegate.Resolution{Outcome: oncegate.OutcomeFailed, Reason: "soak audit: the downstream's record says it failed",
				Note: "decided by the soak audit from the downstream's status endpoint"}
		default:
			result, err := json.Marshal(record)
			if err != nil {
				return "", fmt.Errorf("resolve %s: %w", id, err)
			}
			decision = oncegate.Resolution{Outcome: oncegate.OutcomeCompleted, Result: result,
				Note: "decided by the soak audit from the downstream's status endpoint"}
		}
	}
	if err := c.resolve(ctx, opsToken, id, decision); err != nil {
		return "", err
	}
	return decision.Outcome, nil
}

// recordOf returns the downstream's record of operation id: from the
// action's HTTP status endpoint (GET ?client_reference=<id>) when it has
// one, else straight from the simulator's database, by idempotency key or
// client_reference (what GET /_sim/executions counts), for the actions
// whose downstream has no such endpoint (payments.transfer, the MCP tools).
func recordOf(ctx context.Context, c *client, sim *pgxpool.Pool, action *catalog.Action, id string) (map[string]any, error) {
	d := action.Downstream
	if d.Status == "" || (d.Kind != "" && d.Kind != plan.KindHTTP) {
		var record map[string]any
		err := sim.QueryRow(ctx, `SELECT row_to_json(t) FROM sim_transfer t
			WHERE idempotency_key = $1 OR client_reference = $1 ORDER BY created_at LIMIT 1`, id).Scan(&record)
		if err != nil {
			return nil, fmt.Errorf("downstream record of %s: %w", id, err)
		}
		return record, nil
	}
	raw, code, err := c.do(ctx, http.MethodGet, d.Status+"?client_reference="+id, nil, requestTimeout)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("downstream record of %s: HTTP %d", id, code)
	}
	var record map[string]any
	if err := json.Unmarshal(raw, &record); err != nil {
		return nil, fmt.Errorf("downstream record of %s: %w", id, err)
	}
	return record, nil
}
