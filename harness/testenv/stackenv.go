package testenv

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// ReadStackEnv reads the `export KEY=value` lines of the production-like
// profile's stack.env (scripts/prod.sh; a value may be single-quoted) and
// checks that it names what every harness of the profile needs.
func ReadStackEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = strings.Trim(v, "'")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	for _, k := range []string{"GATEWAY_URLS", "DOWNSTREAM_URL", "DATABASE_URL", "SIMULATOR_DATABASE_URL", "REDIS_ADDRS",
		"TEMPORAL_ADDRESS", "ONCEGATE_CA_FILE", "ONCEGATE_TOKEN_ALICE", "ONCEGATE_TOKEN_BOB", "ONCEGATE_OPS_TOKEN"} {
		if env[k] == "" {
			return nil, fmt.Errorf("%s: no %s", path, k)
		}
	}
	return env, nil
}
