package benche2e

import (
	"fmt"
	"os"
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
	// CPUBareWorker is the bare workflow's worker process; the report
	// shows it as the worker of the bare phases.
	CPUBareWorker = "bare worker"
)

// cpuSources are the sources in the report's order.
var cpuSources = []string{CPUMachine, CPUGateway, CPUWorker, CPUBench}

// cpuReader reads the CPU time used so far by the machine (every CPU, busy
// time only) and by the processes of interest.
type cpuReader struct {
	pids map[string]func() int
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

// processCPU returns utime+stime of /proc/<pid>/stat.
func processCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected %q", pid, s)
	}
	// After "pid (comm)": state is field 3; utime and stime are 14 and 15.
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad times", pid)
	}
	return time.Duration(ut+st) * clockTick, nil
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
