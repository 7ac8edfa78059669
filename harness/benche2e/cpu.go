package benche2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// CPU sources a phase's CPU time is read from.
const (
	CPUMachine = "machine"
	CPUGateway = "gateway"
	CPUWorker  = "worker"
	CPUBench   = "benchmark"
	// CPUBareWorker is the bare workflow's worker process.
	CPUBareWorker = "bare worker"
	// CPUFloors is the HTTP floors' process (FloorsFlag).
	CPUFloors = "floors"
)

// The dev stack's servers, named as the production-like profile's pid
// files name theirs (scripts/prod.sh), so that both reports' columns match.
const (
	CPUTemporal   = "temporal"
	CPUPostgres   = "postgres"
	CPURedis      = "redis"
	CPUDownstream = "downstream"
)

// cpuReader reads the CPU time used so far by the machine (every CPU, busy
// time only) and by the processes of interest: pids are read alone, trees
// with every live descendant and the children they reaped (PostgreSQL's
// backends are children of its postmaster).
type cpuReader struct {
	pids  map[string]func() int
	trees map[string]int
}

// read returns the CPU time used so far by each source; a source that
// cannot be read is left out.
func (c cpuReader) read() map[string]time.Duration {
	out := map[string]time.Duration{}
	if d, err := machineBusy(); err == nil {
		out[CPUMachine] = d
	}
	for name, pid := range c.pids {
		if d, err := processCPU(pid()); err == nil {
			out[name] = d
		}
	}
	if len(c.trees) > 0 {
		procs := readProcs()
		for name, pid := range c.trees {
			if d, ok := treeCPU(procs, pid); ok {
				out[name] = d
			}
		}
	}
	return out
}

// machineBusy sums the non-idle times of /proc/stat's cpu line.
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected %q", line)
	}
	var busy int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		// user nice system idle iowait irq softirq steal guest guest_nice:
		// idle and iowait are not busy; guest time is already in user.
		if i == 3 || i == 4 || i >= 8 {
			continue
		}
		busy += n
	}
	return time.Duration(busy) * clockTick, nil
}

// procStat is what the benchmark reads of one /proc/<pid>/stat.
type procStat struct {
	pid, ppid int
	// own is utime+stime; reaped is cutime+cstime (the children it waited for).
	own, reaped time.Duration
}

// parseStat parses the text of a /proc/<pid>/stat.
func parseStat(s string) (procStat, error) {
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("stat: unexpected %q", s)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
	if err != nil {
		return procStat{}, fmt.Errorf("stat: pid: %w", err)
	}
	// After "pid (comm)": state is field 3, ppid 4; utime, stime, cutime
	// and cstime are 14 to 17.
	f := strings.Fields(s[end+1:])
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("stat of %d: too few fields", pid)
	}
	var n [5]int64
	for i, field := range []int{1, 11, 12, 13, 14} {
		if n[i], err = strconv.ParseInt(f[field], 10, 64); err != nil {
			return procStat{}, fmt.Errorf("stat of %d: field %d: %w", pid, field+3, err)
		}
	}
	return procStat{pid: pid, ppid: int(n[0]), own: time.Duration(n[1]+n[2]) * clockTick, reaped: time.Duration(n[3]+n[4]) * clockTick}, nil
}

// processCPU returns utime+stime of /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	p, err := parseStat(string(b))
	return p.own, err
}

// readProcs reads every process's stat it can (a process that ends while
// it reads is skipped).
func readProcs() []procStat {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	out := make([]procStat, 0, len(paths))
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if p, err := parseStat(string(b)); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// treeCPU is the CPU time of root and its live descendants, each with the
// children it reaped: a descendant's time counts once, whether it still
// runs (its own time) or ended (in its parent's reaped time). ok is false
// when root is not among procs.
func treeCPU(procs []procStat, root int) (d time.Duration, ok bool) {
	children := map[int][]procStat{}
	for _, p := range procs {
		if p.pid == root {
			ok = true
			d += p.own + p.reaped
			continue
		}
		children[p.ppid] = append(children[p.ppid], p)
	}
	if !ok {
		return 0, false
	}
	for next := children[root]; len(next) > 0; {
		var deeper []procStat
		for _, c := range next {
			d += c.own + c.reaped
			deeper = append(deeper, children[c.pid]...)
		}
		next = deeper
	}
	return d, true
}

// cpuDelta returns b-a per source present in both.
func cpuDelta(a, b map[string]time.Duration) map[string]time.Duration {
	out := map[string]time.Duration{}
	for k, v := range b {
		if w, ok := a[k]; ok {
			out[k] = v - w
		}
	}
	return out
}
