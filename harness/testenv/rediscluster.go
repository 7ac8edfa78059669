package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCluster is a Redis Cluster of real redis-server processes in cluster
// mode, created with redis-cli --cluster create, for one test.
type RedisCluster struct {
	// Addrs are the host:port of every node, masters first.
	Addrs []string
	nodes []*Process
}

// StartRedisCluster starts masters+masters*replicas redis-server nodes on
// free ports, joins them into one cluster, waits until every node reports
// cluster_state:ok, and stops them at the end of the test.
func StartRedisCluster(t testing.TB, masters, replicas int) *RedisCluster {
	t.Helper()
	c, err := NewRedisCluster(t.TempDir(), masters, replicas)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// NewRedisCluster is StartRedisCluster with its files in dir; the caller stops it.
func NewRedisCluster(dir string, masters, replicas int) (*RedisCluster, error) {
	if masters < 3 {
		return nil, fmt.Errorf("redis cluster: need at least 3 masters, got %d", masters)
	}
	c := &RedisCluster{}
	for i := range masters * (1 + replicas) {
		port, err := FreePort()
		if err != nil {
			c.Stop()
			return nil, err
		}
		bus, err := FreePort()
		if err != nil {
			c.Stop()
			return nil, err
		}
		nodeDir := filepath.Join(dir, fmt.Sprintf("node-%d", i+1))
		if err := os.MkdirAll(nodeDir, 0o755); err != nil {
			c.Stop()
			return nil, err
		}
		p, err := StartProcess(fmt.Sprintf("redis-%d", i+1), filepath.Join(nodeDir, "redis.log"), []string{
			"redis-server", "--port", itoa(port), "--bind", "127.0.0.1", "--protected-mode", "no",
			"--daemonize", "no", "--save", "", "--appendonly", "no", "--dir", nodeDir,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", itoa(bus), "--cluster-node-timeout", "2000",
		}, nil, nil)
		if err != nil {
			c.Stop()
			return nil, fmt.Errorf("start redis cluster node (apt-get install -y redis-server?): %w", err)
		}
		c.nodes = append(c.nodes, p)
		c.Addrs = append(c.Addrs, fmt.Sprintf("127.0.0.1:%d", port))
	}
	ctx := context.Background()
	for i, addr := range c.Addrs {
		if err := pingNode(ctx, addr); err != nil {
			c.Stop()
			return nil, fmt.Errorf("redis cluster node %s: %w\n%s", addr, err, c.nodes[i].Log())
		}
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-replicas", itoa(replicas), "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redis-cli --cluster create: %w\n%s", err, out)
	}
	if err := c.WaitOK(ctx, 30*time.Second); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func pingNode(ctx context.Context, addr string) error {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	return WaitFor(ctx, 15*time.Second, func(ctx context.Context) error { return rdb.Ping(ctx).Err() })
}

// WaitOK waits until every running node reports cluster_state:ok.
func (c *RedisCluster) WaitOK(ctx context.Context, timeout time.Duration) error {
	return WaitFor(ctx, timeout, func(ctx context.Context) error {
		for i, addr := range c.Addrs {
			if !c.nodes[i].Running() {
				continue
			}
			rdb := redis.NewClient(&redis.Options{Addr: addr})
			info, err := rdb.ClusterInfo(ctx).Result()
			rdb.Close()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return fmt.Errorf("node %s: cluster_state not ok", addr)
			}
		}
		return nil
	})
}

// Kill kills node i (0-based) with SIGKILL.
func (c *RedisCluster) Kill(i int) { c.nodes[i].Kill() }

// Stop stops every node.
func (c *RedisCluster) Stop() {
	for _, p := range c.nodes {
		p.Stop()
	}
}

// ClusterMasters returns host:port of every master in a CLUSTER NODES
// answer that serves slots and is not failing.
func ClusterMasters(nodes string) []string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		// id addr flags master ping pong epoch link slot-range...
		if len(f) > 8 && strings.Contains(f[2], "master") && !strings.Contains(f[2], "fail") {
			out = append(out, strings.SplitN(f[1], "@", 2)[0])
		}
	}
	return out
}
