package api

import (
	"crypto/tls"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/harness/testenv"
)

// TestConfigDefaultsAreTheTags: each default is declared once, in its
// envDefault tag: a configuration parsed from an empty environment holds
// them (the values docs/reference.md names), and a Config built in Go gets
// the same from WithDefaults (gateway.Defaults reads the tags).
func TestConfigDefaultsAreTheTags(t *testing.T) {
	t.Parallel()
	c, err := ConfigFromEnv(map[string]string{
		"DATABASE_URL": "postgres://x", "REDIS_URL": "redis://x", "ONCEGATE_FINGERPRINT_KEYS": "k:abc", "ONCEGATE_RECEIPT_KEYS": "r:abc", "ONCEGATE_ENV": gateway.EnvDev,
	})
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:8080", c.Gateway.GatewayURL)
	assert.Equal(t, "oncegate", c.Temporal.TaskQueue)
	assert.Equal(t, 2*time.Second, c.Gateway.ConfirmWait)
	assert.Equal(t, 30*time.Second, c.Gateway.ClaimGrace)
	assert.Equal(t, 2*time.Second, c.Gateway.PollAfter)
	assert.Equal(t, 30*time.Second, c.ShutdownTimeout)
	assert.Equal(t, gateway.DefaultRetryAfter, c.Gateway.RetryAfter)
	assert.Equal(t, DefaultRequestTimeout, c.RequestTimeout)
	assert.Equal(t, 4096, c.Gateway.FinalCache)
	zero := gateway.Config{}.WithDefaults()
	assert.Equal(t, c.Gateway.ConfirmWait, zero.ConfirmWait)
	assert.Equal(t, c.Gateway.ClaimGrace, zero.ClaimGrace)
	assert.Equal(t, c.Gateway.PollAfter, zero.PollAfter)
	assert.Equal(t, c.Gateway.MaxWatchers, zero.MaxWatchers)
	assert.Equal(t, c.Gateway.EnrolmentTTL, zero.EnrolmentTTL)
	assert.Equal(t, c.Gateway.GatewayURL, zero.GatewayURL)
	assert.Zero(t, zero.FinalCache, "a Config built in Go keeps no finished records unless asked")
	assert.Equal(t, c.Gateway.FinalCache, gateway.Defaults().FinalCache)
}

// TestConfigNamesTheBadValue: a malformed or non-positive duration and a
// bad GATEWAY_URL are refused with the variable and the value.
func TestConfigNamesTheBadValue(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"DATABASE_URL": "postgres://x", "REDIS_URL": "redis://x", "ONCEGATE_FINGERPRINT_KEYS": "k:abc", "ONCEGATE_RECEIPT_KEYS": "r:abc", "ONCEGATE_ENV": gateway.EnvDev,
		"ONCEGATE_CONFIRM_WAIT": "0s", "ONCEGATE_POLL_AFTER": "soon", "GATEWAY_URL": "::", "ONCEGATE_ALERT_WEBHOOK": "ftp://x",
		"ONCEGATE_FINAL_CACHE": "-1",
	}
	_, err := ConfigFromEnv(env)
	require.Error(t, err)
	for _, want := range []string{
		`ONCEGATE_CONFIRM_WAIT="0s": want a positive duration`,
		`ONCEGATE_POLL_AFTER="soon": unable to parse duration: time: invalid duration "soon"`,
		`GATEWAY_URL="::": want a URL such as http://127.0.0.1:8080`,
		`ONCEGATE_ALERT_WEBHOOK="ftp://x": want an http(s) URL`,
		`ONCEGATE_FINAL_CACHE=-1: want how many finished operations to keep, or 0 (off)`,
	} {
		assert.ErrorContains(t, err, want)
	}
	assert.NotContains(t, err.Error(), `ONCEGATE_POLL_AFTER="soon": want a positive`, "a malformed value is reported once")
}

// TestConfigSecretFileUnreadable: a _FILE naming a missing file is refused
// with the variable and the file, and only so.
func TestConfigSecretFileUnreadable(t *testing.T) {
	t.Parallel()
	_, err := ConfigFromEnv(map[string]string{
		"DATABASE_URL": "postgres://x", "REDIS_URL": "redis://x", "ONCEGATE_ENV": gateway.EnvDev,
		"ONCEGATE_FINGERPRINT_KEYS_FILE": "/nonexistent/keys", "ONCEGATE_RECEIPT_KEYS": "r:abc",
	})
	require.Error(t, err)
	assert.ErrorContains(t, err, `could not load content of file "/nonexistent/keys" from variable ONCEGATE_FINGERPRINT_KEYS_FILE`)
	assert.NotContains(t, err.Error(), "is required")
}

// TestConfigHTTPS: ONCEGATE_TLS_CERT_FILE and ONCEGATE_TLS_KEY_FILE make the
// gateway serve HTTPS with that certificate; they go together, need an
// https:// GATEWAY_URL and a readable pair.
// A failpoint needs a gateway built for the crash tests; tests are built
// without -tags failpoint, as production is.
func TestConfigRefusesAFailpointNotCompiledIn(t *testing.T) {
	t.Parallel()
	_, err := ConfigFromEnv(map[string]string{
		"DATABASE_URL": "postgres://x", "REDIS_URL": "redis://x", "ONCEGATE_FINGERPRINT_KEYS": "k:abc", "ONCEGATE_RECEIPT_KEYS": "r:abc",
		"ONCEGATE_ENV": gateway.EnvDev, "ONCEGATE_FAILPOINT": "after_claim",
	})
	require.ErrorContains(t, err, "ONCEGATE_FAILPOINT needs a gateway built with -tags failpoint")
}

func TestConfigHTTPS(t *testing.T) {
	t.Parallel()
	certFile, keyFile := testenv.NewSelfSigned(t, "gateway").WriteFiles(t)
	env := func(extra ...string) map[string]string {
		m := map[string]string{
			"DATABASE_URL": "postgres://x", "REDIS_URL": "redis://x", "ONCEGATE_FINGERPRINT_KEYS": "k:abc", "ONCEGATE_RECEIPT_KEYS": "r:abc", "ONCEGATE_ENV": gateway.EnvDev,
			"GATEWAY_URL": "https://127.0.0.1:8443",
		}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	c, err := ConfigFromEnv(env())
	require.NoError(t, err)
	assert.Nil(t, c.TLS, "no certificate: plain HTTP (TLS ends in front of the gateway)")
	assert.Equal(t, "127.0.0.1:8443", c.ListenAddr)

	c, err = ConfigFromEnv(env("ONCEGATE_TLS_CERT_FILE", certFile, "ONCEGATE_TLS_KEY_FILE", keyFile))
	require.NoError(t, err)
	require.NotNil(t, c.TLS)
	assert.Len(t, c.TLS.Certificates, 1)
	assert.Equal(t, uint16(tls.VersionTLS12), c.TLS.MinVersion)

	for _, bad := range []struct {
		env  map[string]string
		want string
	}{
		{env("ONCEGATE_TLS_CERT_FILE", certFile), "go together"},
		{env("ONCEGATE_TLS_KEY_FILE", keyFile), "go together"},
		{env("ONCEGATE_TLS_CERT_FILE", certFile, "ONCEGATE_TLS_KEY_FILE", keyFile, "GATEWAY_URL", "http://127.0.0.1:8080"), "starts with https://"},
		{env("ONCEGATE_TLS_CERT_FILE", keyFile, "ONCEGATE_TLS_KEY_FILE", certFile), "ONCEGATE_TLS_CERT_FILE/ONCEGATE_TLS_KEY_FILE"},
	} {
		_, err := ConfigFromEnv(bad.env)
		assert.ErrorContains(t, err, bad.want)
	}
}

// TestPublicURL: the approval links name localhost with the gateway's port
// when the gateway listens on a loopback address (WebAuthn refuses an IP),
// and the RP ID and origins follow the public URL unless set.
func TestPublicURL(t *testing.T) {
	for url, want := range map[string]string{
		"http://127.0.0.1:8080":   "http://localhost:8080",
		"http://0.0.0.0:9080":     "http://localhost:9080",
		"http://[::1]:8080":       "http://localhost:8080",
		"http://127.0.0.1":        "http://localhost",
		"https://pay.example.com": "https://pay.example.com",
	} {
		c := gateway.Config{GatewayURL: url}.WithDefaults()
		assert.Equal(t, want, c.PublicURL, url)
	}
	g := gateway.Config{GatewayURL: "http://127.0.0.1:8080"}.WithDefaults()
	assert.Equal(t, "localhost", g.WebAuthnRPID)
	assert.Equal(t, []string{"http://localhost:8080"}, g.WebAuthnOrigins)
	g = gateway.Config{PublicURL: "https://pay.example.com/", WebAuthnRPID: "example.com"}.WithDefaults()
	assert.Equal(t, "https://pay.example.com", g.PublicURL)
	assert.Equal(t, "example.com", g.WebAuthnRPID)
	assert.Equal(t, []string{"https://pay.example.com"}, g.WebAuthnOrigins)

	base := map[string]string{"DATABASE_URL": "postgres://x", "REDIS_URL": "redis://x", "ONCEGATE_FINGERPRINT_KEYS": "k:" + strings.Repeat("A", 44),
		"ONCEGATE_RECEIPT_KEYS": "r:" + strings.Repeat("A", 44), "ONCEGATE_ENV": "dev"}
	with := func(kv ...string) map[string]string {
		m := maps.Clone(base)
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	_, err := ConfigFromEnv(with("ONCEGATE_PUBLIC_URL", "http://10.0.0.1:8080"))
	assert.ErrorContains(t, err, "is an IP address", "an IP as the RP ID is refused at start")
	_, err = ConfigFromEnv(with("ONCEGATE_PUBLIC_URL", "https://pay.example.com", "ONCEGATE_WEBAUTHN_ORIGINS", "https://evil.example.org"))
	assert.ErrorContains(t, err, "not on the RP ID")
	_, err = ConfigFromEnv(with("ONCEGATE_PUBLIC_URL", "ftp://x"))
	assert.ErrorContains(t, err, "ONCEGATE_PUBLIC_URL")
	c, err := ConfigFromEnv(with("ONCEGATE_PUBLIC_URL", "https://pay.example.com", "ONCEGATE_WEBAUTHN_RP_ID", "example.com",
		"ONCEGATE_WEBAUTHN_ORIGINS", "https://pay.example.com,https://approve.example.com"))
	require.NoError(t, err)
	assert.Equal(t, []string{"https://pay.example.com", "https://approve.example.com"}, c.Gateway.WebAuthnOrigins)
}
