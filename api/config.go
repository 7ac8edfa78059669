package api

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/oncegate/oncegate/approval/ceremony"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/internal/envconfig"
	"github.com/oncegate/oncegate/internal/failpoint"
	"github.com/oncegate/oncegate/internal/pprofserver"
	"github.com/oncegate/oncegate/internal/storeconn"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/internal/temporalconn"
)

// Defaults of Config's transport settings.
const (
	// DefaultRequestTimeout bounds one request.
	DefaultRequestTimeout = 30 * time.Second
)

// EnvFinalCache is the variable of gateway.Config.FinalCache.
const EnvFinalCache = "ONCEGATE_FINAL_CACHE"

// Dev credentials: the dev token file, and the key ids the dev stack and
// the tests generate their fingerprint and receipt keys under.
const (
	// DevTokensFile is the dev token file's name (deployments/tokens.dev.yaml).
	DevTokensFile = "tokens.dev.yaml"
	// DevKeyPrefix starts the key id of every key the dev stack generates
	// (fingerprint and receipt keys).
	DevKeyPrefix = "dev-"
)

// Config is the gateway's configuration (ARCHITECTURE.md, Configuration),
// parsed from the environment by ConfigFromEnv. New uses the behaviour
// fields; cmd/gateway uses the connection fields. The envDefault of a field
// with a Default* constant is that constant (TestConfigDefaultsAreTheConstants).
type Config struct {
	// Gateway is the service's behaviour (gateway.Config): where it is
	// reached, the waits, the caches, the relying party.
	Gateway gateway.Config
	// ListenAddr is host:port, taken from Gateway.GatewayURL.
	ListenAddr string
	// TLSCertFile is the PEM certificate (chain) the gateway serves HTTPS
	// with; it goes with TLSKeyFile, and GATEWAY_URL is then https://.
	// Unset, the gateway serves plain HTTP (TLS ends in front of it).
	TLSCertFile string `env:"ONCEGATE_TLS_CERT_FILE"`
	// TLSKeyFile is TLSCertFile's private key (PEM).
	TLSKeyFile string `env:"ONCEGATE_TLS_KEY_FILE"`
	// TLS is the HTTPS server's configuration, nil for plain HTTP: what
	// ConfigFromEnv made of TLSCertFile and TLSKeyFile.
	TLS *tls.Config `env:"-"`
	// Config names the PostgreSQL truth (DATABASE_URL, required) and the
	// Redis fast path (REDIS_URL, or REDIS_ADDRS for Redis Cluster nodes).
	storeconn.Config
	// Temporal is where and how the Temporal client connects
	// (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TLS*).
	Temporal temporalconn.Config
	// Pprof serves the runtime profiles when set (ONCEGATE_PPROF_ADDR).
	Pprof pprofserver.Config
	// Telemetry exports traces when an OTLP endpoint is set.
	Telemetry telemetry.Config
	// FingerprintKeys is the keyring spec kid:base64secret[,...]
	// (ONCEGATE_FINGERPRINT_KEYS, or the file ONCEGATE_FINGERPRINT_KEYS_FILE
	// names, such as a mounted secret; one of them required).
	FingerprintKeys string `env:"ONCEGATE_FINGERPRINT_KEYS"`
	// FingerprintKeysFile is the content of the file
	// ONCEGATE_FINGERPRINT_KEYS_FILE names; ConfigFromEnv moves it, trimmed,
	// into FingerprintKeys.
	FingerprintKeysFile string `env:"ONCEGATE_FINGERPRINT_KEYS_FILE,file"`
	// ReceiptKeys is the receipt keyring spec kid:base64seed[,...], each
	// seed the 32 bytes of an Ed25519 key; the first signs, every listed
	// key is published at /.well-known/jwks.json (ONCEGATE_RECEIPT_KEYS, or
	// the file ONCEGATE_RECEIPT_KEYS_FILE names; one of them required).
	ReceiptKeys string `env:"ONCEGATE_RECEIPT_KEYS"`
	// ReceiptKeysFile is the content of the file ONCEGATE_RECEIPT_KEYS_FILE
	// names; ConfigFromEnv moves it, trimmed, into ReceiptKeys.
	ReceiptKeysFile string `env:"ONCEGATE_RECEIPT_KEYS_FILE,file"`
	// CatalogPath is the action catalog.
	CatalogPath string `env:"ONCEGATE_CATALOG" envDefault:"deployments/catalog.dev.yaml"`
	// LimitsPath is the limits file (spend budgets and request rates);
	// empty: no limits.
	LimitsPath string `env:"ONCEGATE_LIMITS"`
	// TokensPath is the static token file; empty disables it. It defaults to
	// the dev token file in the dev environment only.
	TokensPath string `env:"ONCEGATE_TOKENS"`
	// JWTHS256Secret enables HS256 JWTs (ONCEGATE_JWT_HS256_SECRET, or the
	// file ONCEGATE_JWT_HS256_SECRET_FILE names).
	JWTHS256Secret string `env:"ONCEGATE_JWT_HS256_SECRET"`
	// JWTHS256SecretFile is the content of the file
	// ONCEGATE_JWT_HS256_SECRET_FILE names; ConfigFromEnv moves it, trimmed,
	// into JWTHS256Secret.
	JWTHS256SecretFile string `env:"ONCEGATE_JWT_HS256_SECRET_FILE,file"`
	// JWTPublicKeysPath is a PEM file enabling RS256/ES256 JWTs.
	JWTPublicKeysPath string `env:"ONCEGATE_JWT_PUBLIC_KEYS"`
	// JWTAudience, when set, must be in every JWT's aud.
	JWTAudience string `env:"ONCEGATE_JWT_AUDIENCE"`
	// OIDC accepts the access tokens of identity providers and makes the
	// MCP endpoint an OAuth resource server (ONCEGATE_OIDC_*,
	// ONCEGATE_MCP_RESOURCE, ONCEGATE_MCP_SCOPES; config_oidc.go).
	OIDC OIDCConfig
	// AlertWebhook receives security events as JSON.
	AlertWebhook string `env:"ONCEGATE_ALERT_WEBHOOK"`
	// OutcomeFeed makes a confirm that started its operation's workflow
	// wait for the outcome on the fast path's outcome feed (Deps.Outcomes:
	// Redis Pub/Sub, told the moment the outcome is recorded) instead of
	// the workflow's result (a Temporal long poll, told when the workflow
	// has ended). cmd/gateway wires the feed only when it is on.
	OutcomeFeed bool `env:"ONCEGATE_OUTCOME_FEED" envDefault:"true"`
	// RequestTimeout bounds one request (not configurable:
	// DefaultRequestTimeout, or longer than the confirm's wait).
	RequestTimeout time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests at SIGTERM.
	ShutdownTimeout time.Duration `env:"ONCEGATE_SHUTDOWN_TIMEOUT" envDefault:"30s"`
}

// withDefaults fills the zero transport settings; g is the service's
// configuration, its defaults filled.
func (c Config) withDefaults(g gateway.Config) Config {
	c.Gateway = g
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RequestTimeout <= g.ConfirmWait {
		c.RequestTimeout = g.ConfirmWait + 10*time.Second
	}
	if c.OIDC.Enabled() {
		c.OIDC.MCPResource = c.OIDC.mcpResource(g.PublicURL)
	}
	return c
}

// ConfigFromEnv reads the configuration from environ (envconfig.OS() in
// main). It reports every missing required variable and every malformed
// value at once.
func ConfigFromEnv(environ map[string]string) (Config, error) {
	c, err := envconfig.Parse[Config](environ)
	errs := []error{err}
	c.FingerprintKeys = secret(&errs, "ONCEGATE_FINGERPRINT_KEYS", c.FingerprintKeys, c.FingerprintKeysFile)
	c.JWTHS256Secret = secret(&errs, "ONCEGATE_JWT_HS256_SECRET", c.JWTHS256Secret, c.JWTHS256SecretFile)
	c.ReceiptKeys = secret(&errs, "ONCEGATE_RECEIPT_KEYS", c.ReceiptKeys, c.ReceiptKeysFile)
	c.FingerprintKeysFile, c.JWTHS256SecretFile, c.ReceiptKeysFile = "", "", ""
	if c.TokensPath == "" && c.Gateway.Env == gateway.EnvDev {
		c.TokensPath = "deployments/" + DevTokensFile
	}
	errs = append(errs, c.Temporal.Load(), c.Config.Validate(),
		envconfig.Positive(environ, "ONCEGATE_CONFIRM_WAIT", c.Gateway.ConfirmWait),
		envconfig.Positive(environ, "ONCEGATE_CLAIM_GRACE", c.Gateway.ClaimGrace),
		envconfig.Positive(environ, "ONCEGATE_POLL_AFTER", c.Gateway.PollAfter),
		envconfig.Positive(environ, "ONCEGATE_SHUTDOWN_TIMEOUT", c.ShutdownTimeout),
		envconfig.Positive(environ, "ONCEGATE_ENROLMENT_TTL", c.Gateway.EnrolmentTTL))
	for name, value := range map[string]string{"ONCEGATE_FINGERPRINT_KEYS": c.FingerprintKeys, "ONCEGATE_RECEIPT_KEYS": c.ReceiptKeys} {
		if value == "" && strings.TrimSpace(environ[name+"_FILE"]) == "" {
			// A file named but unreadable is already reported; an empty one is
			// "no keys" when cmd/gateway parses the keyring.
			errs = append(errs, fmt.Errorf("%s (or %s_FILE) is required", name, name))
		}
	}
	if c.Gateway.MaxWatchers <= 0 {
		errs = append(errs, fmt.Errorf("ONCEGATE_MAX_WATCHERS=%d: want a positive number", c.Gateway.MaxWatchers))
	}
	if c.Gateway.FinalCache < 0 {
		errs = append(errs, fmt.Errorf("%s=%d: want how many finished operations to keep, or 0 (off)", EnvFinalCache, c.Gateway.FinalCache))
	}
	if c.Gateway.Env != gateway.EnvDev {
		errs = append(errs, deploymentGuards(c)...)
	}
	if c.Gateway.Failpoint != "" && !failpoint.Compiled {
		errs = append(errs, errors.New("ONCEGATE_FAILPOINT needs a gateway built with -tags failpoint (the crash tests build it so): unset it"))
	}
	addr, err := listenAddr(c.Gateway.GatewayURL)
	errs = append(errs, err)
	c.ListenAddr = addr
	c.TLS, err = serverTLS(c)
	errs = append(errs, err)
	if c.AlertWebhook != "" {
		if u, err := url.Parse(c.AlertWebhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("ONCEGATE_ALERT_WEBHOOK=%q: want an http(s) URL", c.AlertWebhook))
		}
	}
	if c.Gateway.PublicURL != "" {
		if u, err := url.Parse(c.Gateway.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("ONCEGATE_PUBLIC_URL=%q: want the http(s) URL a browser reaches the gateway at", c.Gateway.PublicURL))
		}
	}
	c.OIDC = c.OIDC.trimmed()
	d := c.Gateway.WithDefaults()
	errs = append(errs, c.OIDC.check(d.PublicURL)...)
	if cerr := ceremony.CheckConfig(d.WebAuthnRPID, d.WebAuthnOrigins); cerr != nil {
		errs = append(errs, fmt.Errorf("ONCEGATE_WEBAUTHN_RP_ID=%q, ONCEGATE_WEBAUTHN_ORIGINS=%q (taken from ONCEGATE_PUBLIC_URL %s unless set): %w",
			d.WebAuthnRPID, strings.Join(d.WebAuthnOrigins, ","), d.PublicURL, cerr))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("gateway config: %w", err)
	}
	return c.withDefaults(c.Gateway.WithDefaults()), nil
}

// secret is the value of the variable name, or the trimmed content of the
// file name_FILE names (a mounted secret), the library having read it;
// both set is an error.
func secret(errs *[]error, name, value, fileContent string) string {
	fileContent = strings.TrimSpace(fileContent)
	if value != "" && fileContent != "" {
		*errs = append(*errs, fmt.Errorf("set %s or %s_FILE, not both", name, name))
	}
	if value != "" {
		return value
	}
	return fileContent
}

// deploymentGuards lists what a deployment (ONCEGATE_ENV other than dev)
// must not run with: the dev token file, keys generated by the dev stack,
// no authentication at all, a crash failpoint. Each names what to set.
func deploymentGuards(c Config) []error {
	env := c.Gateway.Env
	if env == "" {
		env = "unset"
	}
	var errs []error
	if c.TokensPath != "" && filepath.Base(c.TokensPath) == DevTokensFile {
		errs = append(errs, fmt.Errorf("ONCEGATE_TOKENS=%s is the dev token file, refused in a deployment (ONCEGATE_ENV %s): "+
			"set ONCEGATE_TOKENS to your own token file, or use JWTs (ONCEGATE_JWT_HS256_SECRET[_FILE] or ONCEGATE_JWT_PUBLIC_KEYS); "+
			"for the dev stack set ONCEGATE_ENV=dev", c.TokensPath, env))
	}
	if c.TokensPath == "" && c.JWTHS256Secret == "" && c.JWTPublicKeysPath == "" && !c.OIDC.Enabled() {
		errs = append(errs, fmt.Errorf("no authentication configured (ONCEGATE_ENV %s): set ONCEGATE_OIDC_ISSUER and ONCEGATE_OIDC_AUDIENCE "+
			"(your identity provider), ONCEGATE_JWT_HS256_SECRET[_FILE], ONCEGATE_JWT_PUBLIC_KEYS or ONCEGATE_TOKENS", env))
	}
	for _, keys := range []struct{ what, name, spec, form string }{
		{"fingerprint", "ONCEGATE_FINGERPRINT_KEYS", c.FingerprintKeys, "kid:base64secret"},
		{"receipt", "ONCEGATE_RECEIPT_KEYS", c.ReceiptKeys, "kid:base64seed, a 32-byte Ed25519 seed"},
	} {
		for _, spec := range strings.Split(keys.spec, ",") {
			if kid, _, _ := strings.Cut(strings.TrimSpace(spec), ":"); strings.HasPrefix(kid, DevKeyPrefix) {
				errs = append(errs, fmt.Errorf("%s key %q was generated by the dev stack, refused in a deployment (ONCEGATE_ENV %s): "+
					"generate your own keys into %s[_FILE] (%s, a kid not starting with %q)",
					keys.what, kid, env, keys.name, keys.form, DevKeyPrefix))
			}
		}
	}
	if c.Gateway.Failpoint != "" {
		errs = append(errs, fmt.Errorf("ONCEGATE_FAILPOINT is for crash tests only, refused in a deployment (ONCEGATE_ENV %s): unset it", env))
	}
	return errs
}

// serverTLS loads the gateway's certificate when ONCEGATE_TLS_CERT_FILE and
// ONCEGATE_TLS_KEY_FILE are set (nil, nil when neither is): they go
// together, and GATEWAY_URL must then say https.
func serverTLS(c Config) (*tls.Config, error) {
	if c.TLSCertFile == "" && c.TLSKeyFile == "" {
		return nil, nil
	}
	if c.TLSCertFile == "" || c.TLSKeyFile == "" {
		return nil, errors.New("ONCEGATE_TLS_CERT_FILE and ONCEGATE_TLS_KEY_FILE go together (the gateway's HTTPS certificate and key)")
	}
	if u, err := url.Parse(c.Gateway.GatewayURL); err == nil && u.Scheme != "https" {
		return nil, fmt.Errorf("GATEWAY_URL=%q: the gateway serves HTTPS (ONCEGATE_TLS_CERT_FILE is set), so its URL starts with https://", c.Gateway.GatewayURL)
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("ONCEGATE_TLS_CERT_FILE/ONCEGATE_TLS_KEY_FILE: %w", err)
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}, nil
}

// listenAddr takes host:port from a URL such as http://127.0.0.1:8080.
func listenAddr(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("GATEWAY_URL=%q: want a URL such as %s", raw, gateway.Defaults().GatewayURL)
	}
	if u.Port() != "" {
		return u.Host, nil
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}
