package soak

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/plan"
	"github.com/oncegate/oncegate/operation"
)

// done is a consistent completed operation: the truth, Redis and Temporal
// say DONE with result_ref tr_1, it executed once and the agent was told so.
func done() evidence {
	return evidence{
		op: &opRecord{ID: "op1", Intent: intentRun, Answers: []seen{
			{Request: "preview", answer: answer{Status: "preview_ready"}},
			{Request: "confirm", answer: answer{Status: "in_progress"}},
			{Request: "status", answer: answer{Status: "completed", ResultRef: "tr_1"}},
			{Request: "confirm", answer: answer{Status: "already_completed", ResultRef: "tr_1"}},
		}},
		executions: 1,
		transferID: "tr_1",
		inTruth:    true,
		truth:      truthRow{state: "DONE", paramHash: "h", resultRef: "tr_1"},
		redis:      redisView{found: true, state: "DONE", paramHash: "h", resultRef: "tr_1"},
		temporal: temporalView{found: true, status: enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, idemState: "DONE",
			result: operation.Final{State: "DONE", ResultRef: "tr_1"}},
	}
}

// failed is a consistent refused operation.
func failed() evidence {
	e := done()
	e.executions, e.transferID = 0, ""
	e.truth = truthRow{state: "FAILED", paramHash: "h", failureKind: "downstream_refused"}
	e.redis = redisView{found: true, state: "FAILED", paramHash: "h"}
	e.temporal.idemState = "FAILED"
	e.temporal.result = operation.Final{State: "FAILED", FailureKind: "downstream_refused"}
	e.op.Answers = []seen{{Request: "confirm", answer: answer{Status: "failed", FailureKind: "downstream_refused"}}}
	return e
}

func TestCheckOperationConsistentHasNoViolation(t *testing.T) {
	assert.Empty(t, checkOperation(done()))
	assert.Empty(t, checkOperation(failed()))
	// Redis lost the key (FLUSHALL), or still says IN_FLIGHT: tolerated.
	e := done()
	e.redis = redisView{}
	assert.Empty(t, checkOperation(e))
	e.redis = redisView{found: true, state: "IN_FLIGHT", paramHash: "h"}
	assert.Empty(t, checkOperation(e))
	assert.True(t, staleRedis(e))
	// A payout to a closed account: the downstream holds a record whose
	// own state says failed; nothing moved.
	e = failed()
	e.executions, e.verdict = 1, verdictFailed
	assert.Empty(t, checkOperation(e))
	// An unacknowledged repeat refused, never claimed, never executed.
	e = evidence{op: &opRecord{ID: "op2", Intent: intentUnacknowledgedRepeat, RepeatOf: "op1", Answers: []seen{
		{Request: "preview", answer: answer{Status: "preview_ready"}},
		{Request: "confirm", answer: answer{Status: "temporarily_unavailable"}},
		{Request: "confirm", answer: answer{Status: "repeat_unacknowledged"}},
	}}}
	assert.Empty(t, checkOperation(e))
}

func TestCheckOperationFindsEachViolation(t *testing.T) {
	cases := []struct {
		name   string
		change func(*evidence)
		check  string
	}{
		{"executed twice", func(e *evidence) { e.executions = 2 }, checkExecutions},
		{"done without execution", func(e *evidence) { e.executions = 0 }, checkExecutions},
		{"done with another transfer", func(e *evidence) { e.transferID = "tr_2" }, checkExecutions},
		{"done but the payout failed", func(e *evidence) { e.verdict = verdictFailed }, checkExecutions},
		{"executed without a claim", func(e *evidence) { *e = evidence{op: e.op, executions: 1} }, checkExecutions},
		{"still in flight", func(e *evidence) {
			e.truth.state = "IN_FLIGHT"
			e.op.Answers = nil
		}, checkSettled},
		{"redis param_hash lost", func(e *evidence) { e.redis.paramHash = "" }, checkRedis},
		{"redis says failed", func(e *evidence) { e.redis.state = "FAILED" }, checkRedis},
		{"redis result_ref differs", func(e *evidence) { e.redis.resultRef = "tr_2" }, checkRedis},
		{"no workflow", func(e *evidence) { e.temporal = temporalView{} }, checkTemporal},
		{"workflow failed", func(e *evidence) { e.temporal.result.State = "FAILED" }, checkTemporal},
		{"IdemState behind", func(e *evidence) { e.temporal.idemState = "IN_FLIGHT" }, checkTemporal},
		{"workflow still running", func(e *evidence) { e.temporal.status = enums.WORKFLOW_EXECUTION_STATUS_RUNNING }, checkTemporal},
		{"told another result_ref", func(e *evidence) { e.op.Answers[2].ResultRef = "tr_9" }, checkAnswer},
		{"told failed", func(e *evidence) { e.op.Answers[2].Status = "failed" }, checkAnswer},
		{"told param_mismatch", func(e *evidence) { e.op.Answers[3].Status = "param_mismatch" }, checkAnswer},
		{"unknown after in_progress", func(e *evidence) { e.op.Answers[2].Status = "unknown_operation" }, checkAnswer},
		{"repeat refused without being one", func(e *evidence) { e.op.Answers[3].Status = "repeat_unacknowledged" }, checkAnswer},
		{"unacknowledged repeat ran", func(e *evidence) { e.op.Intent = intentUnacknowledgedRepeat }, checkAmnesia},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := done()
			tc.change(&e)
			vs := checkOperation(e)
			require.NotEmpty(t, vs)
			checks := make([]string, len(vs))
			for i, v := range vs {
				checks[i] = v.Check
				assert.Equal(t, "op1", v.OperationID)
			}
			assert.Contains(t, checks, tc.check)
		})
	}
	e := failed()
	e.executions = 1
	assert.Equal(t, checkExecutions, checkOperation(e)[0].Check, "a failed operation that executed")
	e = failed()
	e.op.Answers[0].FailureKind = "not_executed"
	assert.Equal(t, checkAnswer, checkOperation(e)[0].Check, "told another failure_kind")
	e = failed()
	e.op.Answers[0].Status = "completed"
	assert.Equal(t, checkAnswer, checkOperation(e)[0].Check, "told completed for a failed operation")
}

func TestLedgerChecksRetryableAndOperationID(t *testing.T) {
	l := newLedger()
	op := &opRecord{ID: "op1"}
	l.add(op)
	l.record(op, 0, "confirm", time.Now(), answer{Status: "temporarily_unavailable", Retryable: true})
	l.record(op, 0, "confirm", time.Now(), answer{Status: "in_progress", OperationID: "op1"})
	assert.Empty(t, l.violations)
	l.record(op, 0, "confirm", time.Now(), answer{Status: "in_progress", Retryable: true})
	l.record(op, 0, "confirm", time.Now(), answer{Status: "temporarily_unavailable"})
	l.record(op, 0, "status", time.Now(), answer{Status: "completed", OperationID: "op9"})
	assert.Len(t, l.violations, 3)
	assert.Len(t, l.snapshot()[0].Answers, 5)
}

func TestScheduleIsSeededAndCoversEveryKind(t *testing.T) {
	a, b := Schedule(7, 20*time.Minute), Schedule(7, 20*time.Minute)
	require.Equal(t, a, b)
	assert.NotEqual(t, a, Schedule(8, 20*time.Minute))
	kinds := map[string]bool{}
	for i, ev := range a {
		kinds[ev.Kind] = true
		assert.Less(t, ev.At, 20*time.Minute)
		if i > 0 {
			gap := ev.At - a[i-1].At
			assert.True(t, gap >= minGap && gap <= maxGap, "gap %s", gap)
		}
	}
	short := map[string]bool{}
	for _, ev := range Schedule(9, sliceDuration) {
		short[ev.Kind] = true
	}
	for _, k := range faultKinds {
		assert.True(t, kinds[k.name], "a 20-minute schedule has %s", k.name)
		assert.True(t, short[k.name], "the CI slice's schedule has %s", k.name)
	}
}

// TestProdScheduleCoversEveryKindAndTarget: a 20-minute schedule of the
// production-like profile has every kind of its menu at least 3 times
// (the acceptance of its recorded run), each gateway and worker as a
// target, and no dev-only kind.
func TestProdScheduleCoversEveryKindAndTarget(t *testing.T) {
	menu, parts := prodMenu(6)
	evs := schedule(menu, 7, 20*time.Minute)
	require.Equal(t, evs, schedule(menu, 7, 20*time.Minute))
	kinds, targets := map[string]int{}, map[string]int{}
	for _, ev := range evs {
		kinds[ev.Kind]++
		targets[ev.Target]++
	}
	for _, k := range menu {
		assert.GreaterOrEqual(t, kinds[k.name], 3, k.name)
	}
	for _, h := range prodHops(6) {
		assert.Positive(t, targets[h], "a network fault on %s", h)
	}
	for c, hops := range parts {
		assert.NotEmpty(t, hops, c)
	}
	assert.ElementsMatch(t, []string{"clients->redis-3"}, parts["redis-3"])
	assert.ElementsMatch(t, []string{"gateway-1->postgres", "gateway-1->temporal", "downstream->gateway-1", "agents->gateway-1"}, parts["gateway-1"])
	assert.Contains(t, parts[compTemporal], "temporal->postgres", "a partition of Temporal cuts it from its persistence too")
	assert.Contains(t, parts[compPostgres], "temporal->postgres", "a partition of PostgreSQL cuts Temporal's persistence too")
	assert.NotContains(t, parts, agents, "the agents are never partitioned by themselves")
	for _, c := range []string{"gateway-1", "gateway-2", "worker-1", "worker-2"} {
		assert.Positive(t, targets[c], c)
	}
	assert.Zero(t, kinds[faultFlushRedis]+kinds[faultKillRedis], "the dev stack's single Redis")
	assert.Equal(t, Schedule(7, 20*time.Minute), schedule(faultKinds, 7, 20*time.Minute))
	net := map[string]bool{}
	for _, k := range faultKinds {
		net[k.name] = k.net
	}
	for _, ev := range Schedule(7, 20*time.Minute) {
		if !net[ev.Kind] {
			assert.Empty(t, ev.Target, "a dev kill or simulator fault has one component: its schedule stays what it was")
		}
	}
}

// TestScheduleCrossesEveryHop: the CI slice's schedule, whatever its seed,
// sets a network fault on every hop of the dev stack and partitions a
// component; a long one does so on every hop several times, with the
// streams and values each kind allows.
func TestScheduleCrossesEveryHop(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		hops := map[string]bool{}
		for _, ev := range Schedule(seed, sliceDuration) {
			if ev.Kind != faultNetPartition && ev.Target != "" && strings.Contains(ev.Target, "->") {
				hops[ev.Target] = true
			}
		}
		for _, h := range devHops {
			assert.True(t, hops[h], "seed %d: the CI slice crosses %s", seed, h)
		}
	}
	byHop := map[string]int{}
	for _, ev := range Schedule(7, 20*time.Minute) {
		switch ev.Kind {
		case faultNetPartition:
			assert.Contains(t, devParts, ev.Target)
		case faultNetReset:
			assert.Contains(t, []string{"upstream", "downstream"}, ev.Stream)
			fallthrough
		case faultNetLatency, faultNetBandwidth, faultNetBlackhole, faultNetSlowClose, faultNetLimitData, faultNetFlap:
			assert.Contains(t, devHops, ev.Target)
			byHop[ev.Target]++
		}
		if ev.Kind == faultNetLatency {
			lat := toxicOf(ev).Attributes
			assert.LessOrEqual(t, lat["latency"]+lat["jitter"], 2*hopTimeout(ev.Target).Milliseconds(), "latency with jitter up to twice the hop's timeout")
		}
	}
	for _, h := range devHops {
		assert.GreaterOrEqual(t, byHop[h], 5, h)
	}
}

func TestParseOptions(t *testing.T) {
	env := map[string]string{"SOAK_DURATION": "30m", "SOAK_SEED": "42", "SOAK_AGENTS": "6"}
	o, err := ParseOptions([]string{"-agents", "3"}, func(k string) string { return env[k] }, nil)
	require.NoError(t, err)
	assert.Equal(t, 30*time.Minute, o.Duration)
	assert.Equal(t, uint64(42), o.Seed)
	assert.Equal(t, 3, o.Agents, "a flag wins over the environment")
	assert.Equal(t, DefaultOutDir, o.OutDir)
	assert.Equal(t, ProfileDev, o.Profile)
	o, err = ParseOptions(nil, func(k string) string { return map[string]string{"SOAK_PROFILE": "prod"}[k] }, nil)
	require.NoError(t, err)
	assert.Equal(t, ProfileProd, o.Profile)
	for _, bad := range []map[string]string{{"SOAK_PROFILE": "staging"}, {"SOAK_SEED": "0"}, {"SOAK_SEED": "x"}, {"SOAK_DURATION": "soon"}, {"SOAK_AGENTS": "-1"}} {
		_, err := ParseOptions(nil, func(k string) string { return bad[k] }, nil)
		assert.Error(t, err, "%v", bad)
	}
}

func TestVerdictOf(t *testing.T) {
	payout := &catalog.Action{Downstream: catalog.Downstream{BusinessState: &plan.BusinessState{
		Field: "data.status", Succeeded: []string{"paid"}, Failed: []string{"failed"}, Pending: []string{"pending"}}}}
	record := func(status string) map[string]any { return map[string]any{"data": map[string]any{"status": status}} }
	assert.Equal(t, verdictSucceeded, verdictOf(payout, record("paid")))
	assert.Equal(t, verdictFailed, verdictOf(payout, record("failed")))
	assert.Equal(t, verdictPending, verdictOf(payout, record("pending")))
	assert.Equal(t, verdictPending, verdictOf(payout, map[string]any{}))
	assert.Empty(t, verdictOf(&catalog.Action{}, record("paid")), "no business state")
}

func TestFaultEventJSON(t *testing.T) {
	b, err := json.Marshal(FaultEvent{At: 4797944409, Kind: "latency_ms", Hold: 10623389593, Value: 7426})
	require.NoError(t, err)
	assert.JSONEq(t, `{"at":"4.798s","kind":"latency_ms","hold":"10.623s","value":7426}`, string(b))
	b, err = json.Marshal(FaultEvent{At: 3 * time.Second, Kind: "flushall_redis"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"at":"3s","kind":"flushall_redis"}`, string(b))
}
