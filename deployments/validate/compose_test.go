// Package validate checks the deployments offline, without containers or a
// cluster: the compose file loads with compose-go as docker compose would
// load it, and every kustomize overlay builds and decodes strictly into
// k8s.io/api types, with the guards a production deployment needs.
//
// It is a Go module of its own (deployments/validate/go.mod) so that
// compose-go, kustomize and k8s.io/api stay out of the service's go.mod;
// `make test` runs it explicitly.
package validate

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// secretKeys must reach the binaries from env files or Secrets, never from
// a value written in a deployment file.
var secretKeys = []string{"ONCEGATE_FINGERPRINT_KEYS", "ONCEGATE_RECEIPT_KEYS", "DATABASE_URL", "SIMULATOR_DATABASE_URL", "ONCEGATE_JWT_HS256_SECRET"}

// loadCompose loads deployments/compose/compose.yaml with the given profiles,
// interpolated and normalized as docker compose does, from an empty
// environment so that the result does not depend on the machine.
func loadCompose(t *testing.T, profiles ...string) *types.Project {
	t.Helper()
	dir, err := filepath.Abs("../compose")
	require.NoError(t, err)
	opts, err := cli.NewProjectOptions([]string{filepath.Join(dir, "compose.yaml")},
		cli.WithWorkingDirectory(dir), cli.WithEnv([]string{}), cli.WithProfiles(profiles), cli.WithConsistency(true))
	require.NoError(t, err)
	p, err := opts.LoadProject(context.Background())
	require.NoError(t, err)
	return p
}

func TestComposeLoads(t *testing.T) {
	t.Parallel()
	p := loadCompose(t)
	want := []string{"postgresql", "temporal-schema", "temporal", "temporal-search-attributes", "temporal-ui", "redis", "gateway", "worker"}
	assert.ElementsMatch(t, want, p.ServiceNames())
	_, err := p.GetService("downstream")
	assert.Error(t, err, "the simulator is an optional profile")

	withSim := loadCompose(t, "simulator")
	sim, err := withSim.GetService("downstream")
	require.NoError(t, err)
	assert.NotNil(t, sim.HealthCheck)
}

func TestComposeGuards(t *testing.T) {
	t.Parallel()
	p := loadCompose(t, "simulator")
	for _, name := range []string{"postgresql", "temporal", "redis", "gateway", "downstream"} {
		s, err := p.GetService(name)
		require.NoError(t, err)
		require.NotNil(t, s.HealthCheck, "%s has a healthcheck", name)
		assert.NotEmpty(t, s.HealthCheck.Test, name)
	}
	gw, err := p.GetService("gateway")
	require.NoError(t, err)
	assert.Contains(t, gw.HealthCheck.Test, "http://127.0.0.1:8080/readyz")
	for _, name := range []string{"gateway", "worker", "downstream"} {
		s, err := p.GetService(name)
		require.NoError(t, err)
		assert.NotEmpty(t, s.EnvFiles, "%s takes its secrets from env files", name)
		for _, k := range secretKeys {
			v := s.Environment[k]
			assert.True(t, v == nil || *v == "", "%s: %s carries no value in the committed files", name, k)
		}
		if name != "downstream" {
			env := s.Environment["ONCEGATE_ENV"]
			require.NotNil(t, env, "%s sets ONCEGATE_ENV", name)
			assert.NotEqual(t, "dev", *env, name)
			assert.Contains(t, s.Entrypoint, "/usr/local/bin/"+name)
		}
	}
	w, err := p.GetService("worker")
	require.NoError(t, err)
	require.NotNil(t, w.Deploy)
	require.NotNil(t, w.Deploy.Replicas)
	assert.GreaterOrEqual(t, *w.Deploy.Replicas, 2)
	for _, dep := range []string{"postgresql", "redis", "temporal-search-attributes"} {
		assert.Contains(t, gw.DependsOn, dep)
	}
	assert.Equal(t, types.ServiceConditionCompletedSuccessfully, gw.DependsOn["temporal-search-attributes"].Condition)
	ui, err := p.GetService("temporal-ui")
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(ui.Ports, func(pc types.ServicePortConfig) bool { return pc.Target == 8080 }))
}
