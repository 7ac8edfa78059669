package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readOnlyRedisCommands are the commands that do not write.
var readOnlyRedisCommands = map[string]bool{
	"get": true, "hget": true, "hgetall": true, "hmget": true, "exists": true, "ttl": true, "pttl": true,
	"ping": true, "info": true, "client": true, "hello": true, "command": true, "select": true,
	"type": true, "scan": true, "dbsize": true, "config": true, "script": true,
}

// redisWrites sums the calls of every command that may write.
func redisWrites(t *testing.T, s *inprocStack) int64 {
	t.Helper()
	info, err := s.rdb.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	var total int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		cmd := strings.TrimPrefix(name, "cmdstat_")
		if readOnlyRedisCommands[strings.SplitN(cmd, "|", 2)[0]] {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				require.NoError(t, err)
				total += n
			}
		}
	}
	return total
}

// truthFingerprint captures every row of the truth and its id sequence: any
// insert (even rolled back), update or delete changes it.
func truthFingerprint(t *testing.T, s *inprocStack) string {
	t.Helper()
	var rows int64
	var digest *string
	var seq int64
	ctx := context.Background()
	require.NoError(t, s.truth.Pool().QueryRow(ctx,
		`SELECT count(*), md5(string_agg(w::text, '|' ORDER BY id)) FROM write_record w`).Scan(&rows, &digest))
	require.NoError(t, s.truth.Pool().QueryRow(ctx, `SELECT last_value FROM write_record_id_seq`).Scan(&seq))
	d := ""
	if digest != nil {
		d = *digest
	}
	return fmt.Sprintf("rows=%d seq=%d digest=%s", rows, seq, d)
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
