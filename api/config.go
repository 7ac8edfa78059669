package api

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

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
)

// EnvDev is the ONCEGATE_ENV of the dev stack and the tests. Unset or any
// other value is a deployment, which refuses the dev stack's credentials.
const EnvDev = "dev"

// Dev credentials: the dev token file, and the key ids the dev stack and
// the tests generate their fingerprint keys under.
const (
	// DevTokensFile is the dev token file's name (deployments/tokens.dev.yaml).
	DevTokensFile = "tokens.dev.yaml"
	// DevKeyPrefix starts the key id of every key the dev stack generates.
	DevKeyPrefix = "dev-"
)

// Config is the gateway's configuration (ARCHITECTURE.md, Configuration).
// New uses the behaviour fields; cmd/gateway uses the connection fields.
type Config struct {
	// Env is ONCEGATE_ENV: EnvDev in the dev stack and the tests; anything
	// else (unset included) is a deployment.
	Env string
	// ListenAddr is host:port, taken from GATEWAY_URL.
	ListenAddr string
	// DatabaseURL is the PostgreSQL truth (DATABASE_URL, required).
	DatabaseURL string
	// RedisURL is the Redis fast path (REDIS_URL; required unless RedisAddrs is set).
	RedisURL string
	// RedisAddrs lists Redis Cluster nodes, host:port comma-separated
	// (REDIS_ADDRS); set, the cluster client is used (redisstore.Connect).
	RedisAddrs string
	// Temporal is where and how the Temporal client connects
	// (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TLS*).
	Temporal temporalconn.Config
	// TaskQueue is the workflows' task queue (ONCEGATE_TASK_QUEUE).
	TaskQueue string
	// FingerprintKeys is the keyring spec kid:base64secret[,...]
	// (ONCEGATE_FINGERPRINT_KEYS, or the file ONCEGATE_FINGERPRINT_KEYS_FILE
	// names, such as a mounted secret; one of them required).
	FingerprintKeys string
	// CatalogPath is the action catalog (ONCEGATE_CATALOG).
	CatalogPath string
	// TokensPath is the static token file (ONCEGATE_TOKENS); empty disables
	// it. It defaults to the dev token file in the dev environment only.
	TokensPath string
	// JWTHS256Secret enables HS256 JWTs (ONCEGATE_JWT_HS256_SECRET, or the
	// file ONCEGATE_JWT_HS256_SECRET_FILE names).
	JWTHS256Secret string
	// JWTPublicKeysPath is a PEM file enabling RS256/ES256 JWTs (ONCEGATE_JWT_PUBLIC_KEYS).
	JWTPublicKeysPath string
	// JWTAudience, when set, must be in every JWT's aud (ONCEGATE_JWT_AUDIENCE).
	JWTAudience string
	// AlertWebhook receives security events as JSON (ONCEGATE_ALERT_WEBHOOK).
	AlertWebhook string
	// ConfirmWait is how long a confirm waits for the outcome (ONCEGATE_CONFIRM_WAIT).
	ConfirmWait time.Duration
	// ClaimGrace is the orphan-claim grace period (ONCEGATE_CLAIM_GRACE).
	ClaimGrace time.Duration
	// PollAfter is the poll_after_ms told to agents (ONCEGATE_POLL_AFTER).
	PollAfter time.Duration
	// RetryAfter is the retry_after_ms of temporarily_unavailable.
	RetryAfter time.Duration
	// RequestTimeout bounds one request.
	RequestTimeout time.Duration
	// ShutdownTimeout bounds the drain of in-flight requests at SIGTERM
	// (ONCEGATE_SHUTDOWN_TIMEOUT).
	ShutdownTimeout time.Duration
	// Failpoint makes the gateway kill itself at a named point, for crash
	// tests only (ONCEGATE_FAILPOINT). FailpointAfterClaim: right after a
	// claim was acquired, before any workflow was started. Empty in every
	// real deployment.
	Failpoint string
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
	return c
}

// ConfigFromEnv reads the configuration from getenv (os.Getenv in main). It
// reports every missing required variable and every malformed value at once.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	get := func(name, def string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		return def
	}
	var errs []error
	required := func(name string) string {
		v := get(name, "")
		if v == "" {
			errs = append(errs, fmt.Errorf("%s is required", name))
		}
		return v
	}
	duration := func(name string, def time.Duration) time.Duration {
		v := get(name, "")
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive duration such as 2s", name, v))
			return def
		}
		return d
	}
	// secret reads NAME, or the file NAME_FILE names (a mounted secret).
	secret := func(name string) string {
		v, file := get(name, ""), get(name+"_FILE", "")
		switch {
		case v != "" && file != "":
			errs = append(errs, fmt.Errorf("set %s or %s_FILE, not both", name, name))
		case file != "":
			b, err := os.ReadFile(file)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s_FILE: %w", name, err))
			}
			v = strings.TrimSpace(string(b))
		}
		return v
	}
	env := get("ONCEGATE_ENV", "")
	tokensDefault := ""
	if env == EnvDev {
		tokensDefault = "deployments/" + DevTokensFile
	}
	temporal, err := temporalconn.FromEnv(getenv)
	if err != nil {
		errs = append(errs, err)
	}
	c := Config{
		Env:               env,
		DatabaseURL:       required("DATABASE_URL"),
		RedisURL:          get("REDIS_URL", ""),
		RedisAddrs:        get("REDIS_ADDRS", ""),
		FingerprintKeys:   secret("ONCEGATE_FINGERPRINT_KEYS"),
		Temporal:          temporal,
		TaskQueue:         get("ONCEGATE_TASK_QUEUE", workflows.TaskQueue),
		CatalogPath:       get("ONCEGATE_CATALOG", "deployments/catalog.dev.yaml"),
		TokensPath:        get("ONCEGATE_TOKENS", tokensDefault),
		JWTHS256Secret:    secret("ONCEGATE_JWT_HS256_SECRET"),
		JWTPublicKeysPath: get("ONCEGATE_JWT_PUBLIC_KEYS", ""),
		JWTAudience:       get("ONCEGATE_JWT_AUDIENCE", ""),
		AlertWebhook:      get("ONCEGATE_ALERT_WEBHOOK", ""),
		ConfirmWait:       duration("ONCEGATE_CONFIRM_WAIT", DefaultConfirmWait),
		ClaimGrace:        duration("ONCEGATE_CLAIM_GRACE", DefaultClaimGrace),
		PollAfter:         duration("ONCEGATE_POLL_AFTER", DefaultPollAfter),
		ShutdownTimeout:   duration("ONCEGATE_SHUTDOWN_TIMEOUT", DefaultShutdownTimeout),
		Failpoint:         get("ONCEGATE_FAILPOINT", ""),
	}
	if c.FingerprintKeys == "" && get("ONCEGATE_FINGERPRINT_KEYS_FILE", "") == "" {
		errs = append(errs, errors.New("ONCEGATE_FINGERPRINT_KEYS (or ONCEGATE_FINGERPRINT_KEYS_FILE) is required"))
	}
	if env != EnvDev {
		errs = append(errs, deploymentGuards(c)...)
	}
	if c.Failpoint != "" && !failpointsCompiled {
		errs = append(errs, errors.New("ONCEGATE_FAILPOINT needs a gateway built with -tags failpoint (the crash tests build it so): unset it"))
	}
	if c.RedisURL == "" && c.RedisAddrs == "" {
		errs = append(errs, errors.New("REDIS_URL (one server) or REDIS_ADDRS (Redis Cluster nodes) is required"))
	}
	addr, err := listenAddr(get("GATEWAY_URL", DefaultGatewayURL))
	if err != nil {
		errs = append(errs, err)
	}
	c.ListenAddr = addr
	if c.AlertWebhook != "" {
		if u, err := url.Parse(c.AlertWebhook); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("ONCEGATE_ALERT_WEBHOOK=%q: want an http(s) URL", c.AlertWebhook))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Config{}, fmt.Errorf("gateway config: %w", err)
	}
	return c.withDefaults(), nil
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
	if c.TokensPath == "" && c.JWTHS256Secret == "" && c.JWTPublicKeysPath == "" {
		errs = append(errs, fmt.Errorf("no authentication configured (ONCEGATE_ENV %s): set ONCEGATE_JWT_HS256_SECRET[_FILE], "+
			"ONCEGATE_JWT_PUBLIC_KEYS or ONCEGATE_TOKENS", env))
	}
	for _, spec := range strings.Split(c.FingerprintKeys, ",") {
		if kid, _, _ := strings.Cut(strings.TrimSpace(spec), ":"); strings.HasPrefix(kid, DevKeyPrefix) {
			errs = append(errs, fmt.Errorf("fingerprint key %q was generated by the dev stack, refused in a deployment (ONCEGATE_ENV %s): "+
				"generate your own keys into ONCEGATE_FINGERPRINT_KEYS[_FILE] (kid:base64secret, a kid not starting with %q)",
				kid, env, DevKeyPrefix))
		}
	}
	if c.Failpoint != "" {
		errs = append(errs, fmt.Errorf("ONCEGATE_FAILPOINT is for crash tests only, refused in a deployment (ONCEGATE_ENV %s): unset it", env))
	}
	return errs
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
