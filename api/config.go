package api

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

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
)

// Config is the gateway's configuration (ARCHITECTURE.md, Configuration).
// New uses the behaviour fields; cmd/gateway uses the connection fields.
type Config struct {
	// ListenAddr is host:port, taken from GATEWAY_URL.
	ListenAddr string
	// DatabaseURL is the PostgreSQL truth (DATABASE_URL, required).
	DatabaseURL string
	// RedisURL is the Redis fast path (REDIS_URL; required unless RedisAddrs is set).
	RedisURL string
	// RedisAddrs lists Redis Cluster nodes, host:port comma-separated
	// (REDIS_ADDRS); set, the cluster client is used (redisstore.Connect).
	RedisAddrs string
	// TemporalAddress is host:port of the Temporal frontend (TEMPORAL_ADDRESS).
	TemporalAddress string
	// TemporalNamespace is the Temporal namespace (TEMPORAL_NAMESPACE).
	TemporalNamespace string
	// TaskQueue is the workflows' task queue (ONCEGATE_TASK_QUEUE).
	TaskQueue string
	// FingerprintKeys is the keyring spec kid:base64secret[,...] (ONCEGATE_FINGERPRINT_KEYS, required).
	FingerprintKeys string
	// CatalogPath is the action catalog (ONCEGATE_CATALOG).
	CatalogPath string
	// TokensPath is the static token file (ONCEGATE_TOKENS); empty disables it.
	TokensPath string
	// JWTHS256Secret enables HS256 JWTs (ONCEGATE_JWT_HS256_SECRET).
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
	c := Config{
		DatabaseURL:       required("DATABASE_URL"),
		RedisURL:          get("REDIS_URL", ""),
		RedisAddrs:        get("REDIS_ADDRS", ""),
		FingerprintKeys:   required("ONCEGATE_FINGERPRINT_KEYS"),
		TemporalAddress:   get("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
		TemporalNamespace: get("TEMPORAL_NAMESPACE", "default"),
		TaskQueue:         get("ONCEGATE_TASK_QUEUE", workflows.TaskQueue),
		CatalogPath:       get("ONCEGATE_CATALOG", "deployments/catalog.dev.yaml"),
		TokensPath:        get("ONCEGATE_TOKENS", "deployments/tokens.dev.yaml"),
		JWTHS256Secret:    get("ONCEGATE_JWT_HS256_SECRET", ""),
		JWTPublicKeysPath: get("ONCEGATE_JWT_PUBLIC_KEYS", ""),
		JWTAudience:       get("ONCEGATE_JWT_AUDIENCE", ""),
		AlertWebhook:      get("ONCEGATE_ALERT_WEBHOOK", ""),
		ConfirmWait:       duration("ONCEGATE_CONFIRM_WAIT", DefaultConfirmWait),
		ClaimGrace:        duration("ONCEGATE_CLAIM_GRACE", DefaultClaimGrace),
		PollAfter:         duration("ONCEGATE_POLL_AFTER", DefaultPollAfter),
		Failpoint:         get("ONCEGATE_FAILPOINT", ""),
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
