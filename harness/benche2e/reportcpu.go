package benche2e

import (
	"fmt"
	"strings"
	"time"
)

// cpuColumn is one column of the report's CPU table: the sum of sources.
type cpuColumn struct {
	title   string
	sources []string
}

// cpuColumns are the CPU table's columns: the machine and each kind of
// process of procs, its instances summed (the production-like profile's
// two gateways, every node of its Redis Cluster).
func cpuColumns(procs []CPUProcess) []cpuColumn {
	out := []cpuColumn{{title: CPUMachine, sources: []string{CPUMachine}}}
	kinds := map[string]int{}
	for _, pr := range procs {
		kind := processKind(pr.Name)
		i, ok := kinds[kind]
		if !ok {
			i = len(out)
			kinds[kind] = i
			out = append(out, cpuColumn{title: kind})
		}
		out[i].sources = append(out[i].sources, pr.Name)
	}
	for i := range out {
		if n := len(out[i].sources); n > 1 {
			out[i].title = fmt.Sprintf("%s (%d)", out[i].title, n)
		}
	}
	return out
}

// processKind is the name of a process without its instance number
// (gateway-2 is a gateway).
func processKind(name string) string {
	if i := strings.LastIndexByte(name, '-'); i > 0 && strings.Trim(name[i+1:], "0123456789") == "" {
		return name[:i]
	}
	return name
}

// countRole counts the processes whose name starts with prefix.
func countRole(procs []CPUProcess, prefix string) int {
	n := 0
	for _, pr := range procs {
		if strings.HasPrefix(pr.Name, prefix) {
			n++
		}
	}
	return n
}

// roleTitles name the roles in the report.
var roleTitles = map[CPURole]string{
	RoleOncegate: "oncegate",
	RoleBare:     "bare workflow",
	RoleShared:   "shared",
	RoleClient:   "client",
	RoleFloors:   "HTTP floors",
}

// writeProcessCPU writes the section of the CPU per completed operation,
// process by process, of the first confirms against the bare workflow.
func writeProcessCPU(p func(string, ...any), r *Results) {
	cs := r.CPUComparisons()
	if len(cs) == 0 {
		return
	}
	w := processWords(r.Options.production())
	p("\n## CPU per completed operation, process by process\n\n")
	p("Each process's CPU time (utime + stime from `/proc/<pid>/stat`, with its live descendants and the children it reaped: PostgreSQL's backends count with their postmaster) over the phase's rounds, divided by the operations that completed. A first-confirm phase's CPU time is read once every workflow it started has closed, so an operation answered `in_progress` counts, with the CPU time of its end, and does not spill into the next phase; the benchmark learns that they have closed from two visibility counts every 25 ms, not by reading each workflow's result (a read of its whole history, which no agent's confirm makes and which costs the Temporal server milliseconds per operation). ")
	p("A side's *servers* are the shared processes and its own: %s for a first confirm, the bare worker for the bare workflow; the other side's processes sit idle meanwhile and are left out. ", w.own)
	p("The *client* is the benchmark process: the agents' %s client for a first confirm; the Temporal client that starts each bare workflow and waits for its result (a caller's work, which oncegate's %s for the agent) for the bare workflow. ", w.http, w.gateways)
	p("Idle work counts where it falls (%s, the Temporal server's timers and the workers' long polls): a slower phase pays more of it per operation; *servers above idle* takes it off.\n\n", w.redis)
	p("| process | role |")
	for _, c := range cs {
		p(" %s | %s |", c.Path, "bare workflow, "+strings.TrimPrefix(c.Path, "first confirm, "))
	}
	p("\n| --- | --- |%s\n", strings.Repeat(" ---: | ---: |", len(cs)))
	for _, pr := range r.Processes {
		p("| %s | %s |", pr.Name, roleTitles[pr.Role])
		for _, c := range cs {
			p(" %s | %s |", ms3(c.Cost.PerProcess[pr.Name]), ms3(c.FloorCost.PerProcess[pr.Name]))
		}
		p("\n")
	}
	p("| **servers** (shared + the side's own) | |")
	for _, c := range cs {
		p(" **%s** | **%s** |", ms3(c.Cost.Servers), ms3(c.FloorCost.Servers))
	}
	p("\n| servers + client | |")
	for _, c := range cs {
		p(" %s | %s |", ms3(c.Cost.Servers+c.Cost.Client), ms3(c.FloorCost.Servers+c.FloorCost.Client))
	}
	p("\n| servers above idle | |")
	for _, c := range cs {
		p(" %s | %s |", ms3(c.Cost.AboveIdle), ms3(c.FloorCost.AboveIdle))
	}
	p("\n| completed operations | |")
	for _, c := range cs {
		p(" %d | %d |", c.Cost.Completed, c.FloorCost.Completed)
	}
	p("\n\n| first confirm / bare workflow | servers | servers + client | servers above idle |\n| --- | ---: | ---: | ---: |\n")
	for _, c := range cs {
		p("| %s | %s | %s | %s |\n", c.Path, ratio(c.Ratio), ratio(c.WithClient), ratio(c.AboveIdle))
	}
	p("%s", w.goal)
	if len(r.IdlePerSecond) > 0 {
		p("\n*Above idle* takes off each server process's idle CPU (read over %s with no load before the rounds) for the phase's time. Idle CPU per second of wall time:", r.IdleWindow.Round(100*time.Millisecond))
		for i, pr := range r.Processes {
			sep := ","
			if i == 0 {
				sep = ""
			}
			p("%s %s %.1f ms/s", sep, pr.Name, ms(r.IdlePerSecond[pr.Name]))
		}
		p(".\n")
	}
}

// sectionWords are the words of the process-by-process section that differ
// between the dev stack and the production-like profile.
type sectionWords struct {
	// own is oncegate's side; gateways what does a caller's work for the
	// agent; http the agents' protocol; redis Redis's idle work.
	own, gateways, http, redis string
	// goal says how the ratios stand to issue 23's CPU goal.
	goal string
}

// processWords are the section's words on the production-like profile
// (prod) or on the dev stack.
func processWords(prod bool) sectionWords {
	if prod {
		return sectionWords{own: "oncegate's gateways and workers", gateways: "gateways do", http: "HTTPS", redis: "Redis's cron and cluster bus"}
	}
	return sectionWords{own: "oncegate's gateway and worker", gateways: "gateway does", http: "HTTP", redis: "Redis's cron",
		goal: fmt.Sprintf("\nIssue 23's bound, ≤ %.1f× the bare workflow's CPU per completed first confirm, is a goal of the production-like profile (`make bench-e2e PROFILE=prod`); on the dev stack (the Temporal dev server, in memory, and a single Redis) these ratios are shown, not judged.\n", maxCPURatio)}
}

// ms3 formats a CPU time per operation in milliseconds.
func ms3(d time.Duration) string { return fmt.Sprintf("%.2f ms", ms(d)) }
