package benche2e

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Machine describes where a run ran.
type Machine struct {
	// CPUs is the number of CPUs the benchmark sees (nproc).
	CPUs int
	// CPUModel is the first "model name" of /proc/cpuinfo.
	CPUModel string
	// GoVersion is `go version`'s output (the toolchain that built the
	// binaries).
	GoVersion string
}

// ThisMachine describes the current machine.
func ThisMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), CPUModel: "unknown", GoVersion: runtime.Version()}
	if out, err := exec.Command("go", "version").Output(); err == nil {
		m.GoVersion = strings.TrimSpace(string(out))
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// loadavg returns the first three fields of /proc/loadavg, or "unknown".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
