package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
)

// redisWrites sums the calls of every command that may write.
func redisWrites(t *testing.T, s *inprocStack) int64 {
	t.Helper()
	n, err := testenv.RedisWriteCalls(context.Background(), s.rdb)
	require.NoError(t, err)
	return n
}

// truthFingerprint captures every row of the truth and its id sequence: any
// insert (even rolled back), update or delete changes it.
func truthFingerprint(t *testing.T, s *inprocStack) string {
	t.Helper()
	d, err := testenv.TruthDigest(context.Background(), s.truth.Pool())
	require.NoError(t, err)
	return d
}

// TestPreviewWritesNothing: 1,000 previews — new params, repeated params,
// and params of an operation that just completed (the amnesia guard reads)
// — leave Redis's write commands and the truth unchanged.
func TestPreviewWritesNothing(t *testing.T) {
	s := startInproc(t)

	// One completed operation, so the amnesia guard has something to find.
	done := map[string]any{"amount": "5.00", "currency": "USD", "payee_id": "p-done"}
	a := s.post(t, "/v1/actions/payments.transfer/preview", map[string]any{"params": done})
	require.Equal(t, "preview_ready", a.str("status"), a.String())
	fp, id := a.str("fingerprint"), a.str("operation_id")
	deadline := time.Now().Add(60 * time.Second)
	for {
		c := s.post(t, "/v1/actions/payments.transfer/confirm", map[string]any{"fingerprint": fp, "params": done})
		if st := c.str("status"); st == "completed" || st == "already_completed" {
			break
		}
		require.True(t, time.Now().Before(deadline), "never completed: %s", c)
		time.Sleep(100 * time.Millisecond)
	}

	redisBefore := redisWrites(t, s)
	truthBefore := truthFingerprint(t, s)

	for i := 0; i < 1000; i++ {
		params := map[string]any{"amount": strconv.Itoa(1+i%97) + ".50", "currency": "usd", "payee_id": fmt.Sprintf("p-%d", i%13), "memo": "x"}
		scope := "payments.transfer"
		switch i % 4 {
		case 0:
			params = done // the recent operation: recent_operation is reported
		case 1:
			scope = "payments.legacy_transfer" // no quote
		}
		p := call(t, http.MethodPost, s.url+"/v1/actions/"+scope+"/preview", "dev-alice", map[string]any{"params": params})
		require.Equal(t, "preview_ready", p.str("status"), p.String())
		if i%4 == 0 {
			rec, ok := p.Body["recent_operation"].(map[string]any)
			require.True(t, ok, "preview of a repeat must report recent_operation: %s", p)
			assert.Equal(t, id, rec["operation_id"])
		}
	}

	assert.Equal(t, redisBefore, redisWrites(t, s), "previews wrote to Redis")
	assert.Equal(t, truthBefore, truthFingerprint(t, s), "previews wrote to PostgreSQL")
}
