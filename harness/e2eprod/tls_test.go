package e2eprod

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/oncegate/oncegate/harness/testenv"
)

// TestEveryHopEncrypted: each server of the profile talks TLS with a
// client that trusts the profile's CA, and refuses a plaintext client —
// the gateways (HTTPS; also verified by their public name, the passkeys'
// origins, as a browser reaches them), every Redis Cluster node, PostgreSQL (for the
// truth, the simulator's and Temporal's databases) and the Temporal
// frontend, which also refuses a TLS client without a certificate of the
// profile's CA (mTLS). Every TCP connection PostgreSQL serves is TLS.
func TestEveryHopEncrypted(t *testing.T) {
	p := loadProfile(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("gateways", func(t *testing.T) {
		for _, gw := range p.gateways {
			require.True(t, strings.HasPrefix(gw, "https://"), gw)
			a := must(t, http.MethodGet, gw+"/healthz", "", nil)
			assert.Equal(t, http.StatusOK, a.Code, a.String())

			plain := "http://" + strings.TrimPrefix(gw, "https://") + "/v1/tools"
			resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(plain)
			require.NoError(t, err, "Go's TLS server answers a plaintext request with a refusal")
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
			assert.Contains(t, string(body), "Client sent an HTTP request to an HTTPS server", "no API answer over plaintext")
		}
	})

	// A person's browser reaches the gateways by the profile's public name
	// (a .localhost name: the loopback); the server certificate names it.
	t.Run("public name", func(t *testing.T) {
		origins := strings.Split(p.env["ONCEGATE_WEBAUTHN_ORIGINS"], ",")
		require.Len(t, origins, len(p.gateways), "one passkey origin per gateway")
		browser := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: p.tlsConfig(),
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				_, port, err := net.SplitHostPort(addr)
				if err != nil {
					return nil, err
				}
				return (&net.Dialer{}).DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
			},
		}}
		for _, origin := range origins {
			resp, err := browser.Get(origin + "/healthz")
			require.NoError(t, err, "TLS to %s, verified by its name", origin)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode, origin)
		}
	})

	t.Run("redis", func(t *testing.T) {
		for _, addr := range strings.Split(p.env["REDIS_ADDRS"], ",") {
			require.NoError(t, p.redis(t, addr).Ping(ctx).Err(), "TLS to %s", addr)
			plain := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second})
			err := plain.Ping(ctx).Err()
			plain.Close()
			assert.Error(t, err, "a plaintext client of %s is refused", addr)
			t.Logf("a plaintext client of %s: %v", addr, err)
		}
	})

	t.Run("postgres", func(t *testing.T) {
		for _, key := range []string{"DATABASE_URL", "SIMULATOR_DATABASE_URL"} {
			u, err := url.Parse(p.env[key])
			require.NoError(t, err)
			require.Equal(t, "verify-full", u.Query().Get("sslmode"), "%s verifies the server's certificate and name", key)
			conn, err := pgx.Connect(ctx, p.env[key])
			require.NoError(t, err, key)
			var ssl bool
			require.NoError(t, conn.QueryRow(ctx, `SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()`).Scan(&ssl))
			assert.True(t, ssl, "%s is encrypted", key)
			// Every client connection PostgreSQL serves over TCP (the
			// gateways', workers', simulator's and Temporal's) is TLS.
			var plaintext int
			require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
				WHERE a.backend_type = 'client backend' AND a.client_addr IS NOT NULL AND NOT s.ssl`).Scan(&plaintext))
			assert.Zero(t, plaintext, "plaintext TCP connections to PostgreSQL")
			conn.Close(ctx)

			q := u.Query()
			q.Set("sslmode", "disable")
			q.Del("sslrootcert")
			u.RawQuery = q.Encode()
			_, err = pgx.Connect(ctx, u.String())
			require.Error(t, err, "a plaintext client is refused")
			t.Logf("a plaintext client of %s: %v", key, err)
			assert.Contains(t, err.Error(), "no encryption", "pg_hba.conf rejects hostnossl")
		}
		for _, db := range []string{"temporal", "temporal_visibility"} {
			assert.NotEqual(t, "0", p.psql(t, db, `SELECT count(*) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid)
				WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND s.ssl`),
				"the Temporal server's connections to %s are TLS", db)
		}
	})

	t.Run("temporal", func(t *testing.T) {
		tc := p.temporal(t) // mTLS
		_, err := tc.CheckHealth(ctx, &client.CheckHealthRequest{})
		require.NoError(t, err)
		for name, opts := range map[string]client.ConnectionOptions{
			"plaintext":                 {},
			"TLS without a certificate": {TLS: p.tlsConfig()},
			"a certificate of another CA": {TLS: func() *tls.Config {
				c := p.tlsConfig()
				c.Certificates = []tls.Certificate{testenv.NewSelfSigned(t, "intruder").Cert}
				return c
			}()},
		} {
			dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
			c, err := client.DialContext(dctx, client.Options{HostPort: p.env["TEMPORAL_ADDRESS"], Namespace: p.env["TEMPORAL_NAMESPACE"],
				ConnectionOptions: opts, Logger: quietLogger{}})
			dcancel()
			if err == nil {
				c.Close()
			}
			assert.Error(t, err, "the frontend refuses a client with %s", name)
			t.Logf("a client with %s: %v", name, err)
		}
	})
}

// quietLogger drops the Temporal SDK's logs.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
