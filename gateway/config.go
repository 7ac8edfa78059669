package gateway

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/oncegate/oncegate/internal/envconfig"
)

// EnvDev is the ONCEGATE_ENV of the dev stack and the tests. Unset or any
// other value is a deployment, which refuses the dev stack's credentials.
const EnvDev = "dev"

// FailpointAfterClaim kills the gateway with SIGKILL right after it acquired
// a claim and before it started the workflow: the crash the orphan-claim
// takeover exists for.
const FailpointAfterClaim = "after_claim"

// Config is the service's behaviour. The gateway's configuration (api.Config)
// embeds it and parses it from the environment by its tags.
type Config struct {
	// Env is ONCEGATE_ENV: EnvDev in the dev stack and the tests; anything
	// else (unset included) is a deployment.
	Env string `env:"ONCEGATE_ENV"`
	// GatewayURL is where the gateway is reached.
	GatewayURL string `env:"GATEWAY_URL" envDefault:"http://127.0.0.1:8080"`
	// MaxWatchers bounds the operations whose outcome the gateway waits
	// for at once; past it a confirm answers in_progress at once.
	MaxWatchers int `env:"ONCEGATE_MAX_WATCHERS" envDefault:"256"`
	// InProcessWorker also runs the Temporal worker (workflow and
	// activities, the worker's variables apply) in the gateway's process,
	// and starts each workflow eagerly: its first workflow task is handed
	// to that worker in the start call's answer instead of through the
	// task queue (StartWorkflowOptions.EnableEagerStart). For small
	// deployments; separate workers still poll the same task queue.
	InProcessWorker bool `env:"ONCEGATE_INPROCESS_WORKER"`
	// ConfirmWait is how long a confirm waits for the outcome.
	ConfirmWait time.Duration `env:"ONCEGATE_CONFIRM_WAIT" envDefault:"2s"`
	// FinalCache is how many finished (DONE or FAILED) operations' records,
	// read from the store, the gateway keeps to answer their replayed
	// confirms and status polls without a store round trip, each until its
	// replay is no longer owed (completed_at + the action's terminal_ttl);
	// a finished record never changes (finals). 0 turns it off, as in a
	// Config built in Go.
	FinalCache int `env:"ONCEGATE_FINAL_CACHE" envDefault:"4096"`
	// ClaimGrace is the age after which an IN_FLIGHT claim with no
	// workflow is an orphan that a confirm takes over.
	ClaimGrace time.Duration `env:"ONCEGATE_CLAIM_GRACE" envDefault:"30s"`
	// PollAfter is the poll_after_ms told to agents.
	PollAfter time.Duration `env:"ONCEGATE_POLL_AFTER" envDefault:"2s"`
	// RetryAfter is the retry_after_ms of temporarily_unavailable (not
	// configurable).
	RetryAfter time.Duration `env:"-"`
	// PublicURL is where a person's browser reaches the gateway: the base of
	// the approval and enrolment links (ONCEGATE_PUBLIC_URL). Unset, it is
	// GatewayURL with a loopback address replaced by localhost, since
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

// DefaultRetryAfter is the retry_after_ms of temporarily_unavailable (no
// variable sets it).
const DefaultRetryAfter = time.Second

// Defaults is Config with every default of its envDefault tags: the one
// place each default is declared (the configuration's table in
// docs/reference.md is read from the same tags). Read once.
var Defaults = sync.OnceValue(func() Config {
	c, err := envconfig.Parse[Config](map[string]string{})
	if err != nil {
		panic(fmt.Sprintf("gateway: Config's envDefault tags do not parse: %v", err)) // a bug, caught by every test
	}
	return c
})

// WithDefaults fills the zero fields with their defaults (Defaults;
// FinalCache excepted: 0 turns the cache off, as in a Config built in Go)
// and derives PublicURL, the relying party ID and the origins.
func (c Config) WithDefaults() Config {
	d := Defaults()
	if c.ConfirmWait <= 0 {
		c.ConfirmWait = d.ConfirmWait
	}
	if c.ClaimGrace <= 0 {
		c.ClaimGrace = d.ClaimGrace
	}
	if c.PollAfter <= 0 {
		c.PollAfter = d.PollAfter
	}
	if c.RetryAfter <= 0 {
		c.RetryAfter = DefaultRetryAfter
	}
	if c.MaxWatchers <= 0 {
		c.MaxWatchers = d.MaxWatchers
	}
	if c.EnrolmentTTL <= 0 {
		c.EnrolmentTTL = d.EnrolmentTTL
	}
	if c.GatewayURL == "" {
		c.GatewayURL = d.GatewayURL
	}
	if c.PublicURL == "" {
		c.PublicURL = publicURLOf(c.GatewayURL)
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
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
