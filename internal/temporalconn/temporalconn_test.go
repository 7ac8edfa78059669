package temporalconn

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/harness/testenv"
	"github.com/oncegate/oncegate/internal/envconfig"
)

// fromEnv parses a Config from environ and loads its TLS files, as the
// binaries' configurations do.
func fromEnv(environ map[string]string) (Config, error) {
	c, err := envconfig.Parse[Config](environ)
	if err != nil {
		return c, err
	}
	return c, c.Load()
}

// writeCert writes a self-signed certificate for temporal.internal and its
// key as PEM files.
func writeCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	return testenv.NewSelfSigned(t, "oncegate", "temporal.internal").WriteFiles(t)
}

func TestPlaintextByDefault(t *testing.T) {
	c, err := fromEnv(nil)
	require.NoError(t, err)
	assert.Equal(t, Config{Address: "127.0.0.1:7233", Namespace: "default", TaskQueue: "oncegate"}, c)
	o := c.Apply(client.Options{})
	assert.Nil(t, o.ConnectionOptions.TLS)
	assert.Equal(t, "127.0.0.1:7233", o.HostPort)
}

func TestMutualTLS(t *testing.T) {
	cert, key := writeCert(t)
	c, err := fromEnv(map[string]string{
		"TEMPORAL_ADDRESS": "temporal.internal:7233", "TEMPORAL_TLS_CA_FILE": cert,
		"TEMPORAL_TLS_CERT_FILE": cert, "TEMPORAL_TLS_KEY_FILE": key, "TEMPORAL_TLS_SERVER_NAME": "temporal.internal",
	})
	require.NoError(t, err)
	require.NotNil(t, c.TLS)
	assert.Len(t, c.TLS.Certificates, 1)
	assert.NotNil(t, c.TLS.RootCAs)
	assert.Equal(t, "temporal.internal", c.TLS.ServerName)
	assert.Same(t, c.TLS, c.Apply(client.Options{}).ConnectionOptions.TLS)
}

func TestSystemRoots(t *testing.T) {
	c, err := fromEnv(map[string]string{"TEMPORAL_TLS": "true"})
	require.NoError(t, err)
	require.NotNil(t, c.TLS)
	assert.Nil(t, c.TLS.RootCAs, "the system's roots")
}

func TestRefusals(t *testing.T) {
	cert, _ := writeCert(t)
	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"cert without key": {map[string]string{"TEMPORAL_TLS_CERT_FILE": cert}, "go together"},
		"missing CA":       {map[string]string{"TEMPORAL_TLS_CA_FILE": "/nonexistent/ca.pem"}, "TEMPORAL_TLS_CA_FILE"},
		"not a PEM":        {map[string]string{"TEMPORAL_TLS_CA_FILE": writeFile(t, "hello")}, "no PEM certificate"},
		"bad switch":       {map[string]string{"TEMPORAL_TLS": "yes"}, `TEMPORAL_TLS="yes": strconv.ParseBool`},
		"client without token URL": {map[string]string{"TEMPORAL_OAUTH_CLIENT_ID": "w", "TEMPORAL_OAUTH_CLIENT_SECRET": "s"},
			"TEMPORAL_OAUTH_TOKEN_URL, TEMPORAL_OAUTH_CLIENT_ID and TEMPORAL_OAUTH_CLIENT_SECRET go together"},
		"token URL without secret": {map[string]string{"TEMPORAL_OAUTH_TOKEN_URL": "http://idp/token", "TEMPORAL_OAUTH_CLIENT_ID": "w"},
			"go together"},
	} {
		_, err := fromEnv(tc.env)
		assert.ErrorContains(t, err, tc.want, name)
	}
}

func writeFile(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, []byte(s), 0o600))
	return p
}

// TestGzipOffByDefault: the client sends gRPC uncompressed unless
// TEMPORAL_GRPC_GZIP=true asks for the SDK's gzip.
func TestGzipOffByDefault(t *testing.T) {
	c, err := fromEnv(nil)
	require.NoError(t, err)
	assert.IsType(t, &client.GrpcCompressionNone{}, c.Apply(client.Options{}).ConnectionOptions.GrpcCompression)
	c, err = fromEnv(map[string]string{"TEMPORAL_GRPC_GZIP": "true"})
	require.NoError(t, err)
	assert.IsType(t, &client.GrpcCompressionGzip{}, c.Apply(client.Options{}).ConnectionOptions.GrpcCompression)
}
