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
	"github.com/oncegate/oncegate/internal/envconfig"
	"github.com/oncegate/oncegate/internal/failpoint"
	"github.com/oncegate/oncegate/internal/pprofserver"
	"github.com/oncegate/oncegate/internal/storeconn"
	"github.com/oncegate/oncegate/internal/telemetry"
	"github.com/oncegate/oncegate/internal/temporalconn"
	"github.com/oncegate/oncegate/workflows"
)

// Defaults of Config.
const (
	// DefaultConfirmWait is how long a confirm waits for the outcome.
	DefaultConfirmWait = 2 * time.Second
	// DefaultClaimGrace is the age after which an IN_FLIGHT claim with no
	// workflow and no truth record is an orphan.
	DefaultClaimGrace = 30 * time.Second
	// DefaultPollAfter is the poll_after_ms told to an agent.
	DefaultPollAfter = 2 * time.Second
	// DefaultRetryAfter is the retry_after_ms of temporarily_unavailable.
	DefaultRetryAfter = time.Second
	// DefaultRequestTimeout bounds one request.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultGatewayURL is where the gateway listens by default.
	DefaultGatewayURL = "http://127.0.0.1:8080"
	// DefaultShutdownTimeout bounds the drain of in-flight requests at SIGTERM.
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultMaxWatchers bounds the operations whose outcome the gateway
	// waits for at once (each on the outcome feed or a Temporal long poll).
	DefaultMaxWatchers = 256
	// DefaultEnrolmentTTL is how long a passkey enrolment link works.
	DefaultEnrolmentTTL = 15 * time.Minute
	// DefaultFinalCache is how many finished operations' records a gateway
	// keeps to answer their replays and status polls without the store.
	DefaultFinalCache = 4096
)

// EnvFinalCache is the variable of Config.FinalCache.
const EnvFinalCache = "ONCEGATE_FINAL_CACHE"

// EnvDev is the ONCEGATE_ENV of the dev stack and the tests. Unset or any
// other value is a deployment, which refuses the dev stack's credentials.
const EnvDev = "dev"

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
	// Env is ONCEGATE_ENV: EnvDev in the dev stack and the tests; anything
	// else (unset included) is a deployment.
	Env string `env:"ONCEGATE_ENV"`
	// GatewayURL is where the gateway is reached; ListenAddr comes from it.
	GatewayURL string `env:"GATEWAY_URL" envDefault:"http://127.0.0.1:8080"`
	// ListenAddr is host:port, taken from GatewayURL.
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
	// TaskQueue is the workflows' task queue.
	TaskQueue string `env:"ONCEGATE_TASK_QUEUE" envDefault:"oncegate"`
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
	// MaxWatchers bounds the operations whose outcome the gateway waits
	// for at once; past it a confirm answers in_progress at once.
	MaxWatchers int `env:"ONCEGATE_MAX_WATCHERS" envDefault:"256"`
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
	// InProcessWorker also runs the Temporal worker (workflow and
	// activities, the worker's variables apply) in the gateway's process,
	// and starts each workflow eagerly: its first workflow task is handed
	// to that worker in the start call's answer instead of through the
	// task queue (StartWorkflowOptions.EnableEagerStart). For small
	// deployments; separate workers still poll the same task queue.
	InProcessWorker bool `env:"ONCEGATE_INPROCESS_WORKER"`
	// ConfirmWait is how long a confirm waits for the outcome.
	ConfirmWait time.Duration `env:"ONCEGATE_CONFIRM_WAIT" envDefault:"2s"`
	// OutcomeFeed makes a confirm that started its operation's workflow
	// wait for the outcome on the fast path's outcome feed (Deps.Outcomes:
	// Redis Pub/Sub, told the moment the outcome is recorded) instead of
	// the workflow's result (a Temporal long poll, told when the workflow
	// has ended). cmd/gateway wires the feed only when it is on.
	OutcomeFeed bool `env:"ONCEGATE_OUTCOME_FEED" envDefault:"true"`
	// FinalCache is how many finished (DONE or FAILED) operations' records,
	// read from the store, the gateway keeps to answer their replayed
	// confirms and status polls without a store round trip, each until its
	// replay is no longer owed (completed_at + the action's terminal_ttl);
	// a finished record never changes (finals). 0 turns it off, as in a
	// Config built in Go.
	FinalCache int `env:"ONCEGATE_FINAL_CACHE" envDefault:"4096"`
	// ClaimGrace is the orphan-claim grace period.
	ClaimGrace time.Duration `env:"ONCEGATE_CLAIM_GRACE" envDefault:"30s"`
	// PollAfter is the poll_after_ms told to agents.
	PollAfter time.Duration `env:"ONCEGATE_POLL_AFTER" envDefault:"2s"`
	// RetryAfter is the retry_after_ms of temporarily_unavailable (not
	// configurable: DefaultRetryAfter).
	RetryAfter time.Duration
	// RequestTimeout bounds one request (not configurable:
	// DefaultRequestTimeout, or longer than ConfirmWait).
	RequestTimeout time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests at SIGTERM.
	ShutdownTimeout time.Duration `env:"ONCEGATE_SHUTDOWN_TIMEOUT" envDefault:"30s"`
	// PublicURL is where a person's browser reaches the gateway: the base of
	// the approval and enrolment links (ONCEGATE_PUBLIC_URL). Unset, it is
	// GATEWAY_URL with a loopback address replaced by localhost, since
	// WebAuthn refuses an IP address as the relying party.
	PublicURL string `env:"ONCEGATE_PUBLIC_URL"`
	// WebAuthnRPID is the passkeys' relying party ID
	// (ONCEGATE_WEBAUTHN_RP_ID; default: PublicURL's host). Never an IP
	// address; passkeys are bound to it, so changing it orphans them.
	WebAuthnRPID string `env:"ONCEGATE_WEBAUTHN_RP_ID"`
	// WebAuthnOrigins are the origins the approval and enrolment pages may
	// be served from (ONCEGATE_WEBAUTHN_ORIGINS, comma-separated; default:
	// PublicURL's origin).
	WebAuthnOrigins []string `env:"ONCEGATE_WEBAUTHN_ORIGINS"`
	// EnrolmentTTL is how long a passkey enrolment link works.
	EnrolmentTTL time.Duration `env:"ONCEGATE_ENROLMENT_TTL" envDefault:"15m"`
	// Failpoint makes the gateway kill itself at a named point, for crash
	// tests only (ONCEGATE_FAILPOINT). FailpointAfterClaim: right after a
	// claim was acquired, before any workflow was started. Empty in every
	// real deployment.
	Failpoint string `env:"ONCEGATE_FAILPOINT"`
}

// FailpointAfterClaim kills the gateway with SIGKILL right after it acquired
// a claim and before it started the workflow: the crash the orphan-claim
// takeover exists for.
const FailpointAfterClaim = "after_claim"

// withDefaults fills the zero behaviour fields.
func (c Config) withDefaults() Config {
	if c.TaskQueue == "" {
		c.TaskQueue = workflows.TaskQueue
	}
	if c.ConfirmWait <= 0 {
		c.ConfirmWait = DefaultConfirmWait
	}
	if c.ClaimGrace <= 0 {
		c.ClaimGrace = DefaultClaimGrace
	}
	if c.PollAfter <= 0 {
		c.PollAfter = DefaultPollAfter
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.RequestTimeout <= c.ConfirmWait {
		c.RequestTimeout = c.ConfirmWait + 10*time.Second
	}
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.MaxWatchers <= 0 {
		c.MaxWatchers = DefaultMaxWatchers
	}
	if c.EnrolmentTTL <= 0 {
		c.EnrolmentTTL = DefaultEnrolmentTTL
	}
	if c.GatewayURL == "" {
		c.GatewayURL = DefaultGatewayURL
	}
	if c.PublicURL == "" {
		c.PublicURL = publicURLOf(c.GatewayURL)
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if c.OIDC.Enabled() {
		c.OIDC.MCPResource = c.OIDC.mcpResource(c.PublicURL)
	}
	if u, err := url.Parse(c.PublicURL); err == nil {
		if c.WebAuthnRPID == "" {
			c.WebAuthnRPID = u.Hostname()
		}
		if len(c.WebAuthnOrigins) == 0 {
			c.WebAuthnOrigins = []string{u.Scheme + "://" + u.Host}
		}
	}
	return c
}

// publicURLOf is gatewayURL with a loopback or unspecified IP host
// replaced by localhost: browsers treat http://localhost as a secure
// context, and WebAuthn refuses an IP address as the relying party.
func publicURLOf(gatewayURL string) string {
	u, err := url.Parse(gatewayURL)
	if err != nil || u.Host == "" {
		return gatewayURL
	}
	if ip := net.ParseIP(u.Hostname()); ip != nil && (ip.IsLoopback() || ip.IsUnspecified()) {
		port := u.Port()
		u.Host = "localhost"
		if port != "" {
			u.Host = net.JoinHostPort("localhost", port)
		}
	}
	return strings.TrimRight(u.String(), "/")
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
	if c.TokensPath == "" && c.Env == EnvDev {
		c.TokensPath = "deployments/" + DevTokensFile
	}
	errs = append(errs, c.Temporal.LoadTLS(), c.Config.Validate(),
		envconfig.Positive(environ, "ONCEGATE_CONFIRM_WAIT", c.ConfirmWait),
		envconfig.Positive(environ, "ONCEGATE_CLAIM_GRACE", c.ClaimGrace),
		envconfig.Positive(environ, "ONCEGATE_POLL_AFTER", c.PollAfter),
		envconfig.Positive(environ, "ONCEGATE_SHUTDOWN_TIMEOUT", c.ShutdownTimeout),
		envconfig.Positive(environ, "ONCEGATE_ENROLMENT_TTL", c.EnrolmentTTL))
	for name, value := range map[string]string{"ONCEGATE_FINGERPRINT_KEYS": c.FingerprintKeys, "ONCEGATE_RECEIPT_KEYS": c.ReceiptKeys} {
		if value == "" && strings.TrimSpace(environ[name+"_FILE"]) == "" {
			// A file named but unreadable is already reported; an empty one is
			// "no keys" when cmd/gateway parses the keyring.
			errs = append(errs, fmt.Errorf("%s (or %s_FILE) is required", name, name))
		}
	}
	if c.MaxWatchers <= 0 {
		errs = append(errs, fmt.Errorf("ONCEGATE_MAX_WATCHERS=%d: want a positive number", c.MaxWatchers))
	}
	if c.FinalCache < 0 {
		errs = append(errs, fmt.Errorf("%s=%d: want how many finished operations to keep, or 0 (off)", EnvFinalCache, c.FinalCache))
	}
	if c.Env != EnvDev {
		errs = append(errs, deploymentGuards(c)...)
	}
	if c.Failpoint != "" && !failpoint.Compiled {
		errs = append(errs, errors.New("ONCEGATE_FAILPOINT needs a gateway built with -tags failpoint (the crash tests build it so): unset it"))
	}
	addr, err := listenAddr(c.GatewayURL)
	errs = append(errs, err)
	c.ListenAddr = addr
	c.TLS, err = serverTLS(c)
	errs = append(errs, err)
	if c.AlertWebhook != "" {
		if u, err := url.Parse(c.AlertWebhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("ONCEGATE_ALERT_WEBHOOK=%q: want an http(s) URL", c.AlertWebhook))
		}
	}
	if c.PublicURL != "" {
		if u, err := url.Parse(c.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("ONCEGATE_PUBLIC_URL=%q: want the http(s) URL a browser reaches the gateway at", c.PublicURL))
		}
	}
	c.OIDC = c.OIDC.trimmed()
	d := c.withDefaults()
	errs = append(errs, c.OIDC.check(d.PublicURL)...)
	if cerr := ceremony.CheckConfig(d.WebAuthnRPID, d.WebAuthnOrigins); cerr != nil {
		errs = append(errs, fmt.Errorf("ONCEGATE_WEBAUTHN_RP_ID=%q, ONCEGATE_WEBAUTHN_ORIGINS=%q (taken from ONCEGATE_PUBLIC_URL %s unless set): %w",
			d.WebAuthnRPID, strings.Join(d.WebAuthnOrigins, ","), d.PublicURL, cerr))
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("gateway config: %w", err)
	}
	return c.withDefaults(), nil
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
	env := c.Env
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
	if c.Failpoint != "" {
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
	if u, err := url.Parse(c.GatewayURL); err == nil && u.Scheme != "https" {
		return nil, fmt.Errorf("GATEWAY_URL=%q: the gateway serves HTTPS (ONCEGATE_TLS_CERT_FILE is set), so its URL starts with https://", c.GatewayURL)
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
		return "", fmt.Errorf("GATEWAY_URL=%q: want a URL such as %s", raw, DefaultGatewayURL)
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
