package testenv

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTruthDigestSeesEveryWrite: an insert, an update, a delete and a
// rolled-back insert each change the digest; reading does not.
func TestTruthDigestSeesEveryWrite(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, NewDatabase(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(ctx) })
	_, err = conn.Exec(ctx, `CREATE TABLE write_record (id bigserial PRIMARY KEY, state text NOT NULL)`)
	require.NoError(t, err)
	digest := func() string {
		d, err := TruthDigest(ctx, conn)
		require.NoError(t, err)
		return d
	}
	seen := map[string]string{"empty": digest()}
	writes := []struct{ name, sql string }{
		{"insert", `INSERT INTO write_record (state) VALUES ('IN_FLIGHT'), ('DONE')`},
		{"update", `UPDATE write_record SET state = 'FAILED' WHERE state = 'IN_FLIGHT'`},
		{"delete", `DELETE FROM write_record WHERE state = 'DONE'`},
	}
	for _, w := range writes {
		_, err := conn.Exec(ctx, w.sql)
		require.NoError(t, err, w.name)
		d := digest()
		for prev, pd := range seen {
			assert.NotEqual(t, pd, d, "%s after %s", w.name, prev)
		}
		seen[w.name] = d
	}
	before := digest()
	assert.Equal(t, before, digest(), "reading changes nothing")
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	_, err = tx.Exec(ctx, `INSERT INTO write_record (state) VALUES ('DONE')`)
	require.NoError(t, err)
	require.NoError(t, tx.Rollback(ctx))
	assert.NotEqual(t, before, digest(), "a rolled-back insert moves the id sequence")
}
