package benche2e

import (
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// Area is a share of a CPU profile attributed to one part of the code.
type Area struct {
	// Name names the part (a package or a kind of work).
	Name string
	// Share is its part of the sampled CPU time (0..1).
	Share float64
}

// areaRules attribute a stack to a part of the code: walking from the leaf
// up, the first frame whose function contains one of a rule's substrings
// decides. Order matters only between rules that match the same frame.
var areaRules = []struct {
	name string
	subs []string
}{
	{"syscalls", []string{"internal/runtime/syscall", "syscall.", "internal/poll."}},
	{"encoding/json", []string{"encoding/json."}},
	{"message texts (text/template, api/messages)", []string{"text/template.", "oncegate/api/messages."}},
	{"crypto (HMAC, SHA-256, random ids)", []string{"crypto/"}},
	{"params and fingerprint: validation, canonical form, signing", []string{"oncegate/internal/params.", "oncegate/internal/jcs.", "oncegate/fingerprint."}},
	{"go-redis", []string{"redis/go-redis"}},
	{"pgx", []string{"jackc/pgx", "jackc/puddle"}},
	{"logging (log/slog)", []string{"log/slog."}},
	{"metrics (prometheus)", []string{"prometheus/client_golang"}},
	{"regexp", []string{"regexp."}},
	{"Echo router and middleware", []string{"labstack/echo"}},
	{"oncegate api (own code)", []string{"oncegate/api.", "oncegate/idemstore", "oncegate/internal/catalog"}},
	{"oncegate workflows and activities (own code)", []string{"oncegate/workflows.", "oncegate/activities.", "oncegate/internal/downstream."}},
	{"OpenTelemetry (tracing, the SDK's metrics)", []string{"go.opentelemetry.io/"}},
	{"Temporal SDK (tasks, payloads, interceptors)", []string{"go.temporal.io/"}},
	{"gRPC and protobuf", []string{"google.golang.org/grpc", "google.golang.org/protobuf"}},
	{"net/http server and net", []string{"net/http.", "net.", "bufio."}},
	{"Go runtime (other)", []string{"runtime."}},
}

// syscallOwners name whose socket a syscall served, found further up.
var syscallOwners = []struct {
	name string
	subs []string
}{
	{"syscalls ← PostgreSQL (pgx)", []string{"jackc/pgx"}},
	{"syscalls ← Redis (go-redis)", []string{"redis/go-redis"}},
	{"syscalls ← Temporal (gRPC)", []string{"google.golang.org/grpc"}},
	{"syscalls ← HTTP client (quotes)", []string{"net/http.(*persistConn)", "net/http.(*Transport)"}},
	{"syscalls ← HTTP server", []string{"net/http."}},
}

func matchAny(fn string, subs []string) bool {
	for _, s := range subs {
		if strings.Contains(fn, s) {
			return true
		}
	}
	return false
}

// Runtime areas: the garbage collector's own work, the scheduler, and
// allocation, which is named after the code that allocated.
const (
	areaGC        = "GC (background marking)"
	areaScheduler = "scheduler and idle"
	areaStacks    = "goroutine stacks growing (copied)"
	areaAlloc     = "allocation ← "
)

// runtimeAreaOf attributes a stack whose leaf is in the runtime, or "".
func runtimeAreaOf(fns []string) string {
	for i, fn := range fns {
		switch {
		case strings.HasPrefix(fn, "runtime.gcBgMarkWorker"):
			return areaGC
		case strings.HasPrefix(fn, "runtime.copystack"), strings.HasPrefix(fn, "runtime.newstack"):
			return areaStacks
		case strings.HasPrefix(fn, "runtime.schedule"), strings.HasPrefix(fn, "runtime.findRunnable"),
			strings.HasPrefix(fn, "runtime.mcall"), strings.HasPrefix(fn, "runtime.park_m"):
			return areaScheduler
		case strings.HasPrefix(fn, "runtime.mallocgc"), strings.HasPrefix(fn, "runtime.newobject"),
			strings.HasPrefix(fn, "runtime.makeslice"), strings.HasPrefix(fn, "runtime.growslice"),
			strings.HasPrefix(fn, "runtime.makemap"):
			for _, up := range fns[i+1:] {
				if !strings.HasPrefix(up, "runtime.") {
					if a := codeAreaOf([]string{up}); a != "other" {
						return areaAlloc + a
					}
				}
			}
			return areaAlloc + "other"
		}
	}
	return ""
}

// areaOf attributes one stack (leaf first).
func areaOf(fns []string) string {
	if len(fns) > 0 && strings.HasPrefix(fns[0], "runtime.") {
		if a := runtimeAreaOf(fns); a != "" {
			return a
		}
	}
	return codeAreaOf(fns)
}

// codeAreaOf attributes a stack by the first frame an area rule matches.
func codeAreaOf(fns []string) string {
	for i, fn := range fns {
		for _, r := range areaRules {
			if !matchAny(fn, r.subs) {
				continue
			}
			if r.name != "syscalls" {
				return r.name
			}
			for _, up := range fns[i+1:] {
				for _, o := range syscallOwners {
					if matchAny(up, o.subs) {
						return o.name
					}
				}
			}
			return r.name
		}
	}
	return "other"
}

// areas attributes every sample of p to one area and returns the areas by
// share, largest first; the shares add up to 1.
func areas(p *profile.Profile) []Area {
	idx := len(p.SampleType) - 1
	by := map[string]int64{}
	var total int64
	for _, s := range p.Sample {
		var fns []string
		for _, loc := range s.Location {
			for _, line := range loc.Line {
				if line.Function != nil {
					fns = append(fns, line.Function.Name)
				}
			}
		}
		by[areaOf(fns)] += s.Value[idx]
		total += s.Value[idx]
	}
	out := make([]Area, 0, len(by))
	for name, v := range by {
		out = append(out, Area{Name: name, Share: share(v, total)})
	}
	slices.SortFunc(out, func(a, b Area) int {
		if a.Share != b.Share {
			if a.Share > b.Share {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}
