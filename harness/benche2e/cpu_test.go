package benche2e

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseStat(t *testing.T) {
	t.Parallel()
	// A comm with spaces and a parenthesis, as /proc allows.
	p, err := parseStat("4242 (postgres: a (b) c) S 4200 4242 4242 0 -1 4194304 98 0 0 0 150 25 7 3 20 0 1 0 2302208 3133440 393")
	require.NoError(t, err)
	assert.Equal(t, procStat{pid: 4242, ppid: 4200, own: 1750 * time.Millisecond, reaped: 100 * time.Millisecond}, p)

	for _, bad := range []string{"", "4242 postgres S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 eleven 12 13 14 15"} {
		_, err := parseStat(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestParseStatOfThisProcess(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("/proc/self/stat")
	require.NoError(t, err)
	p, err := parseStat(string(b))
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), p.pid)
	assert.Equal(t, os.Getppid(), p.ppid)
}

func TestTreeCPU(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	procs := []procStat{
		{pid: 1, ppid: 0, own: 1000 * ms},                  // init: not in the tree
		{pid: 10, ppid: 1, own: 100 * ms, reaped: 50 * ms}, // the postmaster, with backends it reaped
		{pid: 11, ppid: 10, own: 20 * ms},                  // a live backend
		{pid: 12, ppid: 10, own: 30 * ms, reaped: 5 * ms},
		{pid: 13, ppid: 12, own: 7 * ms},  // a grandchild
		{pid: 20, ppid: 1, own: 400 * ms}, // another process
		{pid: 21, ppid: 20, own: 40 * ms}, // its child
	}
	d, ok := treeCPU(procs, 10)
	require.True(t, ok)
	assert.Equal(t, (100+50+20+30+5+7)*ms, d)

	d, ok = treeCPU(procs, 13)
	require.True(t, ok)
	assert.Equal(t, 7*ms, d, "a leaf is itself")

	_, ok = treeCPU(procs, 99)
	assert.False(t, ok, "a process that is gone is not read as zero")
}
