package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/redisstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
	"github.com/oncegate/oncegate/internal/harness/testenv"
	"github.com/oncegate/oncegate/internal/storeconn"
)

// scriptKeys is a go-redis hook that records the keys of every EVAL and
// EVALSHA the store sends.
type scriptKeys struct {
	mu   sync.Mutex
	keys [][]string
}

func (h *scriptKeys) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *scriptKeys) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.record(cmd.Args())
		return next(ctx, cmd)
	}
}

func (h *scriptKeys) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.record(cmd.Args())
		}
		return next(ctx, cmds)
	}
}

// record keeps the keys of args when they are an EVAL/EVALSHA: name, script
// or sha, numkeys, keys..., argv...
func (h *scriptKeys) record(args []any) {
	if len(args) < 3 {
		return
	}
	name := strings.ToLower(fmt.Sprint(args[0]))
	if name != "eval" && name != "evalsha" {
		return
	}
	n, err := strconv.Atoi(fmt.Sprint(args[2]))
	if err != nil || len(args) < 3+n {
		return
	}
	keys := make([]string, n)
	for i := range n {
		keys[i] = fmt.Sprint(args[3+i])
	}
	h.mu.Lock()
	h.keys = append(h.keys, keys)
	h.mu.Unlock()
}

func (h *scriptKeys) all() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]string(nil), h.keys...)
}

// startCluster starts a Redis Cluster of three masters and returns it with
// the client the binaries build from REDIS_ADDRS.
func startCluster(t *testing.T) (*testenv.RedisCluster, redis.UniversalClient) {
	t.Helper()
	cluster := testenv.StartRedisCluster(t, 3, 0)
	rdb, err := redisstore.Connect(storeconn.Config{RedisAddrs: strings.Join(cluster.Addrs, ",")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdb.Close() })
	return cluster, rdb
}

// TestCluster runs the whole store contract on a real Redis Cluster of three
// masters through the client the binaries build from REDIS_ADDRS, records
// every script's keys, and checks with the server's CLUSTER KEYSLOT that
// each script's keys lie in one slot — the slot of the operation's nonce
// alone, which is what the {nonce} hash tag promises.
func TestCluster(t *testing.T) {
	t.Parallel()
	cluster, rdb := startCluster(t)
	_, isCluster := rdb.(*redis.ClusterClient)
	require.True(t, isCluster, "REDIS_ADDRS builds go-redis's cluster client, got %T", rdb)
	hook := &scriptKeys{}
	rdb.AddHook(hook)

	// t.Run returns when ExerciseFastPath's parallel subtests have finished.
	t.Run("Contract", func(t *testing.T) {
		storetest.ExerciseFastPath(t, func(*testing.T) idemstore.FastPath { return redisstore.New(rdb) })
	})

	recorded := hook.all()
	require.NotEmpty(t, recorded, "the store ran its scripts")
	node := redis.NewClient(&redis.Options{Addr: cluster.Addrs[0]})
	t.Cleanup(func() { _ = node.Close() })
	ctx := context.Background()
	slots := map[int64]bool{}
	for _, keys := range recorded {
		require.NotEmpty(t, keys, "every script takes its operation's key")
		var first int64 = -1
		for _, k := range keys {
			slot, err := node.ClusterKeySlot(ctx, k).Result()
			require.NoError(t, err)
			if first < 0 {
				first = slot
			}
			assert.Equal(t, first, slot, "keys %v span slots", keys)
			// idem:{<nonce>} or recent:{<subject>}: one operation's or one
			// subject's keys hash by their tag.
			_, rest, tagged := strings.Cut(k, "{")
			tag, _, closed := strings.Cut(rest, "}")
			require.True(t, tagged && closed && tag != "", "key %q carries a {hash tag}", k)
			tagSlot, err := node.ClusterKeySlot(ctx, tag).Result()
			require.NoError(t, err)
			assert.Equal(t, tagSlot, slot, "key %q hashes by its tag", k)
		}
		slots[first] = true
	}
	// Random nonces spread over the cluster: more than one slot was used.
	assert.Greater(t, len(slots), 1)
}

// TestClusterMasterKilled: a master of a cluster without replicas dies; the
// operations whose slots it served answer ErrUnavailable (so the combined
// store degrades to PostgreSQL), never a wrong decision.
func TestClusterMasterKilled(t *testing.T) {
	t.Parallel()
	cluster, rdb := startCluster(t)
	s := redisstore.New(rdb)
	ctx := context.Background()

	node := redis.NewClient(&redis.Options{Addr: cluster.Addrs[0]})
	t.Cleanup(func() { _ = node.Close() })
	// Find a claim whose slot the first master serves.
	var c idemstore.Claim
	for {
		c = storetest.NewClaim(t, "owner-a")
		owner, err := slotOwner(ctx, node, redisstore.Key(c.OperationID))
		require.NoError(t, err)
		if owner == cluster.Addrs[0] {
			break
		}
	}
	d, err := s.Acquire(ctx, c)
	require.NoError(t, err)
	require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)

	cluster.Kill(0)
	_, err = s.Get(ctx, c.OperationID)
	require.ErrorIs(t, err, idemstore.ErrUnavailable)
	_, err = s.Acquire(ctx, c)
	require.ErrorIs(t, err, idemstore.ErrUnavailable)
}

// slotOwner returns host:port of the master serving key's slot.
func slotOwner(ctx context.Context, node *redis.Client, key string) (string, error) {
	slot, err := node.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		return "", err
	}
	ranges, err := node.ClusterSlots(ctx).Result()
	if err != nil {
		return "", err
	}
	for _, r := range ranges {
		if int64(r.Start) <= slot && slot <= int64(r.End) && len(r.Nodes) > 0 {
			host, port, err := net.SplitHostPort(r.Nodes[0].Addr)
			if err != nil {
				return "", err
			}
			return net.JoinHostPort(host, port), nil
		}
	}
	return "", fmt.Errorf("slot %d has no master", slot)
}
