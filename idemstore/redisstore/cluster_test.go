package redisstore_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/idemstore/redisstore"
	"github.com/oncegate/oncegate/idemstore/storetest"
	"github.com/oncegate/oncegate/operation"
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
	rdb, err := redisstore.Connect(redisstore.ConnConfig{Addrs: strings.Join(cluster.Addrs, ",")})
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
	// A claim whose slot the first master serves.
	c := claimServed(t, node, func(owner string) bool { return owner == cluster.Addrs[0] })
	d, err := s.Acquire(ctx, c)
	require.NoError(t, err)
	require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)

	cluster.Kill(0)
	_, err = s.Get(ctx, c.OperationID)
	require.ErrorIs(t, err, idemstore.ErrUnavailable)
	_, err = s.Acquire(ctx, c)
	require.ErrorIs(t, err, idemstore.ErrUnavailable)
}

// TestClusterRedirectNotFollowed: a slot's owner that the client does not
// reach (a MOVED or ASK still answered after its redirects: a failover
// under way, or a map of the slots not yet reloaded) is the fast path
// unavailable, so the combined store claims on PostgreSQL alone, never an
// internal error the agent is told not to retry. A client of one node,
// which follows no redirect, stands for a cluster client whose redirects
// ran out.
func TestClusterRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	cluster, _ := startCluster(t)
	ctx := context.Background()
	node := redis.NewClient(&redis.Options{Addr: cluster.Addrs[0]})
	t.Cleanup(func() { _ = node.Close() })
	s := redisstore.New(node)
	c := claimServed(t, node, func(owner string) bool { return owner != cluster.Addrs[0] })
	_, err := s.Acquire(ctx, c)
	require.Error(t, err)
	_, moved := redis.IsMovedError(err)
	require.True(t, moved, "the node answers MOVED: %v", err)
	assert.ErrorIs(t, err, idemstore.ErrUnavailable)
	_, err = s.Get(ctx, c.OperationID)
	assert.ErrorIs(t, err, idemstore.ErrUnavailable)

	// ASK: the slot of a key the first master owns is migrating to
	// another master, and the key is not there: the owner sends the
	// client on, which a client of one node does not follow.
	other := redis.NewClient(&redis.Options{Addr: cluster.Addrs[1]})
	t.Cleanup(func() { _ = other.Close() })
	target, err := other.Do(ctx, "CLUSTER", "MYID").Text()
	require.NoError(t, err)
	c = claimServed(t, node, func(owner string) bool { return owner == cluster.Addrs[0] })
	slot, err := node.ClusterKeySlot(ctx, redisstore.Key(c.OperationID)).Result()
	require.NoError(t, err)
	require.NoError(t, node.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", target).Err())
	t.Cleanup(func() { _ = node.Do(context.Background(), "CLUSTER", "SETSLOT", slot, "STABLE").Err() })
	_, err = s.Get(ctx, c.OperationID)
	require.Error(t, err)
	_, ask := redis.IsAskError(err)
	require.True(t, ask, "the owner answers ASK: %v", err)
	assert.ErrorIs(t, err, idemstore.ErrUnavailable)
}

// claimServed returns a new claim whose key's slot is served by a master
// (host:port, as node's CLUSTER SLOTS tells it) that serves accepts.
func claimServed(t *testing.T, node *redis.Client, serves func(owner string) bool) idemstore.Claim {
	t.Helper()
	for {
		c := storetest.NewClaim(t, "owner-a")
		owner, err := slotOwner(context.Background(), node, redisstore.Key(c.OperationID))
		require.NoError(t, err)
		if serves(owner) {
			return c
		}
	}
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

// commandCalls sums the calls of every command (those a script ran
// inside the server included) over the nodes, from INFO commandstats.
func commandCalls(t *testing.T, nodes []*redis.Client) map[string]int64 {
	t.Helper()
	calls := map[string]int64{}
	for _, n := range nodes {
		info, err := n.Info(context.Background(), "commandstats").Result()
		require.NoError(t, err)
		for line := range strings.Lines(info) {
			name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
			if !ok {
				continue
			}
			v, _, _ := strings.Cut(rest, ",")
			c, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			calls[strings.TrimPrefix(name, "cmdstat_")] += c
		}
	}
	return calls
}

// callsSince is what each command was called between two commandCalls.
func callsSince(before, after map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for k, v := range after {
		if v > before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

// TestClusterReplayCost: on a Redis Cluster with replicas (the
// production-like profile's shape), a replayed claim of a completed
// operation costs one script on the operation's node and one read-only
// script on the subject's recent-intent index, however many live entries
// the index holds: no write (which replicates) and no scan of the index.
// And claims of a subject with more live entries than pruneAt scan the
// index once per doubling, not each time (issue 23: 832 µs of Redis per
// replay at 300 live entries).
func TestClusterReplayCost(t *testing.T) {
	t.Parallel()
	cluster := testenv.StartRedisCluster(t, 3, 1)
	rdb, err := redisstore.Connect(redisstore.ConnConfig{Addrs: strings.Join(cluster.Addrs, ",")})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rdb.Close() })
	var nodes []*redis.Client
	for _, a := range cluster.Addrs {
		n := redis.NewClient(&redis.Options{Addr: a})
		t.Cleanup(func() { _ = n.Close() })
		nodes = append(nodes, n)
	}
	s := redisstore.New(rdb)
	ctx := context.Background()

	// 300 live entries of alice's, as a day of claims leaves them.
	token, err := s.BeginWarm(ctx, "alice", time.Hour)
	require.NoError(t, err)
	var live []idemstore.IntentEntry
	for i := range 300 {
		live = append(live, idemstore.IntentEntry{Scope: "payments.transfer", ParamHash: "live-" + strconv.Itoa(i),
			OperationID: storetest.NewKey(t), CreatedAt: time.Now()})
	}
	ok, err := s.CommitWarm(ctx, idemstore.WarmParams{Subject: "alice", Token: token,
		Marker: idemstore.IndexMarker{Epoch: 1, Horizon: time.Now().Add(-time.Hour)}, Entries: live, TTL: time.Hour})
	require.NoError(t, err)
	require.True(t, ok)
	c := storetest.NewClaim(t, "owner-a")
	_, err = s.Acquire(ctx, c)
	require.NoError(t, err)
	require.NoError(t, s.Finalize(ctx, storetest.Done(c, "owner-a")))

	writes := []string{"hset", "hdel", "del", "pexpire", "pexpireat", "expire", "set"}
	const replays = 20
	before := commandCalls(t, nodes)
	for i := range replays {
		c.Owner = "replayer-" + strconv.Itoa(i)
		d, err := s.Acquire(ctx, c)
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeDone, d.Outcome)
	}
	spent := callsSince(before, commandCalls(t, nodes))
	t.Logf("%d replays: %v", replays, spent)
	assert.EqualValues(t, 2*replays, spent["evalsha"], "the acquire script and the index's, once each per replay")
	assert.Zero(t, spent["hgetall"], "a replay does not scan the index")
	assert.Zero(t, spent["hlen"], "a replay does not size the index")
	for _, w := range writes {
		assert.Zero(t, spent[w], "a replay writes nothing (%s)", w)
	}

	const claims = 20
	before = commandCalls(t, nodes)
	for range claims {
		d, err := s.Acquire(ctx, storetest.NewClaim(t, "owner-b"))
		require.NoError(t, err)
		require.Equal(t, idemstore.OutcomeAcquired, d.Outcome)
	}
	spent = callsSince(before, commandCalls(t, nodes))
	t.Logf("%d first claims: %v", claims, spent)
	assert.LessOrEqual(t, spent["hgetall"], int64(1), "%d claims over 300 live entries scan the index once", claims)
}

// TestClusterOutcomes: on a Redis Cluster the feed's one subscription (on
// the node of OutcomesChannel's slot) hears the outcomes finalized on every
// node.
func TestClusterOutcomes(t *testing.T) {
	t.Parallel()
	_, rdb := startCluster(t)
	ctx := context.Background()
	s := redisstore.New(rdb)
	o := readyFeed(t, s)
	nodes := map[string]bool{}
	for len(nodes) < 3 {
		c := claimed(t, s, "owner-a")
		w := watch(t, o, c.OperationID)
		require.NoError(t, s.Finalize(ctx, storetest.Done(c, "owner-a")))
		assert.Equal(t, operation.StateDone, told(t, w).State)
		node, err := rdb.(*redis.ClusterClient).MasterForKey(ctx, redisstore.Key(c.OperationID))
		require.NoError(t, err)
		nodes[node.Options().Addr] = true
	}
}
