// Package gateway holds oncegate's use cases without a transport: preview,
// confirm, status, resolve, webhooks, approvals, passkeys and limits, each
// a method of Service that takes a typed request and returns an Answer
// (docs/contract.md §4 and §7). The HTTP API (package api), the MCP server
// and the tests are adapters around it. Service reaches its stores and the
// workflow engine only through the small interfaces of ports.go, and every
// decision of a confirm is made by one pure table (decide_confirm.go).
package gateway

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/oncegate/oncegate/approval/ceremony"
	"github.com/oncegate/oncegate/fingerprint"
	"github.com/oncegate/oncegate/idemstore"
	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/limits"
	"github.com/oncegate/oncegate/internal/watch"
	"github.com/oncegate/oncegate/mandate"
	"github.com/oncegate/oncegate/receipt"
	"github.com/oncegate/oncegate/resolution"
)

// Deps is everything the service needs.
type Deps struct {
	// Catalog is the loaded action catalog (required).
	Catalog *catalog.Catalog
	// Keyring signs and verifies fingerprints (required).
	Keyring *fingerprint.Keyring
	// Receipts signs the receipt of every terminal answer (required).
	Receipts *receipt.Keyring
	// Claims is the idempotency store (required).
	Claims Claims
	// Engine starts and watches the operations' workflows (required).
	Engine Engine
	// Approvals keeps approvals, passkeys and enrolment invites. Required
	// when an action's policy can ask for approval; nil turns approvals off.
	Approvals Approvals
	// Mandates keeps the subjects' standing mandates (the truth). Required
	// when an action's policy allows mandates (approval.mandates: allowed).
	Mandates mandate.Store
	// Budgets reads the budgets' windows (the preview's warning, the ops
	// view); nil means no warning and no ops view.
	Budgets Budgets
	// Rates counts the subjects' requests; nil means no rate is enforced.
	Rates Rates
	// Outcomes tells the outcome of an operation whose workflow this
	// gateway started the moment the fast path records it; nil means every
	// confirm waits for its workflow's result.
	Outcomes idemstore.OutcomeFeed
	// Limits are the spend budgets and request rates; nil means none.
	Limits *limits.Limits
	// AlertHook is told about security events; nil means NopAlert.
	AlertHook AlertHook
	// HTTPClient calls the quote endpoints; nil means a client with a 10s timeout.
	HTTPClient *http.Client
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the service's metrics; nil means a new registry.
	Registerer prometheus.Registerer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Config holds the behaviour settings; zero fields take their defaults.
	Config Config
}

// Service is the gateway's use cases. It is safe for concurrent use.
type Service struct {
	cat      *catalog.Catalog
	keys     *fingerprint.Keyring
	receipts *receipt.Keyring
	// resolutions signs operators' decisions (keys derived from the
	// receipt keys); its public keys go in every workflow's input.
	resolutions *resolution.Signer
	// signed keeps the receipts signed lately (receipt.Cache): a replay or
	// status poll of an outcome does not sign it again.
	signed *receipt.Cache
	// results keeps the answer form of stored results (resultForms).
	results *resultForms
	// finals keeps the finished operations' records read from the store
	// (nil: Config.FinalCache is 0).
	finals    *finals
	store     Claims
	engine    Engine
	log       *slog.Logger
	now       func() time.Time
	http      *http.Client
	alert     AlertHook
	cfg       Config
	metrics   *metrics
	instance  string
	limits    *limits.Limits
	rates     Rates
	budgets   Budgets
	watchers  *watch.Group[watched]
	outcomes  idemstore.OutcomeFeed
	approvals Approvals
	mandates  mandate.Store
	ceremony  *ceremony.Ceremony
}

// New validates deps and builds the service.
func New(deps Deps) (*Service, error) {
	switch {
	case deps.Catalog == nil:
		return nil, errors.New("gateway: Catalog is required")
	case deps.Keyring == nil:
		return nil, errors.New("gateway: Keyring is required")
	case deps.Receipts == nil:
		return nil, errors.New("gateway: Receipts is required")
	case deps.Claims == nil:
		return nil, errors.New("gateway: Claims is required")
	case deps.Engine == nil:
		return nil, errors.New("gateway: Engine is required")
	}
	cfg := deps.Config.WithDefaults()
	if err := checkApprovals(deps.Catalog, deps.Approvals != nil, deps.Mandates != nil, cfg); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	s := &Service{
		cat: deps.Catalog, keys: deps.Keyring, receipts: deps.Receipts, store: deps.Claims, engine: deps.Engine,
		log: deps.Logger, now: deps.Now, http: deps.HTTPClient, alert: deps.AlertHook, cfg: cfg, instance: randomHex(8),
		limits: deps.Limits, rates: deps.Rates, budgets: deps.Budgets, approvals: deps.Approvals, mandates: deps.Mandates, outcomes: deps.Outcomes,
	}
	if s.limits == nil {
		s.limits = &limits.Limits{}
	}
	var err error
	if s.signed, err = receipt.NewCache(receipt.CacheSize); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if s.results, err = newResultForms(resultFormsSize); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if s.resolutions, err = resolution.SignerOf(deps.Receipts); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if s.approvals != nil {
		if s.ceremony, err = ceremony.New(ceremony.Config{RPID: cfg.WebAuthnRPID, Origins: cfg.WebAuthnOrigins}); err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.http == nil {
		s.http = &http.Client{Timeout: 10 * time.Second}
	}
	if s.alert == nil {
		s.alert = NopAlert{}
	}
	reg := deps.Registerer
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	if s.metrics, err = newMetrics(reg); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if s.finals, err = newFinals(cfg.FinalCache, reg); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	s.watchers = watch.New[watched](cfg.MaxWatchers, s.metrics.watch)
	ttls := map[string]float64{}
	for scope, a := range s.cat.Actions {
		ttls[scope] = a.InFlightTTL.Seconds()
	}
	if err := registerOnce(reg, newBudgetCollector(s)); err != nil {
		return nil, fmt.Errorf("gateway: register budget metrics: %w", err)
	}
	if err := registerOnce(reg, newCatalogCollector(ttls)); err != nil {
		return nil, fmt.Errorf("gateway: register catalog metrics: %w", err)
	}
	return s, nil
}

// registerOnce registers c on reg; a collector registered already is fine.
func registerOnce(reg prometheus.Registerer, c prometheus.Collector) error {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if err != nil && !errors.As(err, &are) {
		return err
	}
	return nil
}

// checkApprovals refuses a catalog whose actions ask for approval without
// an approval store (or allowing mandates without a mandate store), and,
// in a deployment, with the dev stack's relying
// party (localhost): a deployment sets ONCEGATE_PUBLIC_URL (and the RP ID
// and origins when they differ from it).
func checkApprovals(cat *catalog.Catalog, haveStore, haveMandates bool, cfg Config) error {
	for _, scope := range cat.Scopes() {
		if !cat.Actions[scope].Approval.Asks() {
			continue
		}
		switch {
		case !haveStore:
			return fmt.Errorf("action %s asks for approval: Approvals is required", scope)
		case cat.Actions[scope].Approval.Mandates && !haveMandates:
			return fmt.Errorf("action %s allows standing mandates: Mandates is required", scope)
		case cfg.Env != EnvDev && cfg.WebAuthnRPID == "localhost":
			return fmt.Errorf("action %s asks for approval, and a deployment (ONCEGATE_ENV %q) must set ONCEGATE_PUBLIC_URL "+
				"(where browsers reach the gateway; ONCEGATE_WEBAUTHN_RP_ID and ONCEGATE_WEBAUTHN_ORIGINS when they differ from it), "+
				"not the dev stack's localhost", scope, cfg.Env)
		}
	}
	return nil
}

// Catalog is the service's action catalog.
func (s *Service) Catalog() *catalog.Catalog { return s.cat }

// Receipts is the receipts' keyring (its public keys are published).
func (s *Service) Receipts() *receipt.Keyring { return s.receipts }

// Config is the service's configuration, its defaults filled.
func (s *Service) Config() Config { return s.cfg }

// InstanceID is this gateway instance's random id, the first half of every
// claim owner it writes.
func (s *Service) InstanceID() string { return s.instance }

// ApprovalsOn reports whether the service serves approvals and passkeys.
func (s *Service) ApprovalsOn() bool { return s.approvals != nil }

// randomHex returns n random bytes as lowercase hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
