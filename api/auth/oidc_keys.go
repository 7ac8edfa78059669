package auth

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/MicahParks/keyfunc/v3"
	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/time/rate"
)

// issuerKeys are one issuer's signing keys: its discovery document read by
// go-oidc (which checks that the document names the issuer it was asked
// for), then its JWKS fetched, cached and refreshed by jwkset (every
// JWKSRefresh, and at once, rate-limited, when a token names an unknown
// kid: a key rotated at the provider is found without a restart), handed
// to golang-jwt by keyfunc. The keys serve JWKSMaxAge after their last
// successful fetch; past it, or before the first, the issuer's tokens are
// refused with ErrProviderUnavailable.
type issuerKeys struct {
	issuer string
	cfg    OIDCConfig
	// kf is set once discovery and the first key fetch are done.
	kf atomic.Pointer[keyfunc.Keyfunc]
	// store is the key cache; it notes when its keys were last replaced.
	store *stampedStorage
	// mu guards lastErr, the last discovery or fetch failure, and
	// lastErrAt, when it came.
	mu        sync.Mutex
	lastErr   error
	lastErrAt time.Time
}

// unknownKIDWaitMax bounds how long a token with an unknown kid waits for
// the rate limiter and the fetch it causes; a wait the limiter knows to be
// longer is not waited at all (the kid is unknown at once).
const unknownKIDWaitMax = 5 * time.Second

// newIssuerKeys prepares the keys of issuer (run fetches them).
func newIssuerKeys(issuer string, cfg OIDCConfig) *issuerKeys {
	k := &issuerKeys{issuer: issuer, cfg: cfg}
	k.store = &stampedStorage{Storage: jwkset.NewMemoryStorage(), now: cfg.Now}
	return k
}

// run discovers the issuer, retrying with a doubling wait (at most 30s)
// while it does not answer, then builds the key cache, which refreshes
// itself until ctx ends.
func (k *issuerKeys) run(ctx context.Context) {
	wait := k.cfg.RetryEvery
	for {
		err := k.discover(ctx)
		if err == nil {
			return
		}
		k.fail(err)
		k.cfg.Logger.WarnContext(ctx, "oidc: issuer not reachable yet; its tokens are refused as temporarily unavailable",
			"issuer", k.issuer, "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// discover reads the discovery document and fetches the keys once.
func (k *issuerKeys) discover(ctx context.Context) error {
	dctx, cancel := context.WithTimeout(oidc.ClientContext(ctx, k.cfg.HTTPClient), DefaultDiscoveryTimeout)
	defer cancel()
	provider, err := oidc.NewProvider(dctx, k.issuer)
	if err != nil {
		return fmt.Errorf("discover %s: %w", k.issuer, err)
	}
	var doc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := provider.Claims(&doc); err != nil || doc.JWKSURI == "" {
		return fmt.Errorf("discover %s: no jwks_uri in its discovery document (%v)", k.issuer, err)
	}
	storage, err := jwkset.NewStorageFromHTTP(doc.JWKSURI, jwkset.HTTPClientStorageOptions{
		Client:          k.cfg.HTTPClient,
		Ctx:             ctx,
		HTTPTimeout:     DefaultDiscoveryTimeout,
		RefreshInterval: k.cfg.JWKSRefresh,
		RefreshErrorHandler: func(ctx context.Context, err error) {
			k.fail(err)
			k.cfg.Logger.WarnContext(ctx, "oidc: key fetch failed; the keys fetched before keep serving until their maximum age",
				"issuer", k.issuer, "jwks_uri", doc.JWKSURI, "max_age", k.cfg.JWKSMaxAge, "err", err)
		},
		Storage: k.store,
	})
	if err != nil {
		return fmt.Errorf("fetch the keys of %s at %s: %w", k.issuer, doc.JWKSURI, err)
	}
	client, err := jwkset.NewHTTPClient(jwkset.HTTPClientOptions{
		HTTPURLs: map[string]jwkset.Storage{doc.JWKSURI: storage},
		// A token naming an unknown kid fetches the keys again at once,
		// at most once per interval; past the budget it waits no longer
		// than this before the kid counts as unknown.
		RefreshUnknownKID: rate.NewLimiter(rate.Every(k.cfg.UnknownKIDInterval), 1),
		RateLimitWaitMax:  unknownKIDWaitMax,
		PrioritizeHTTP:    true,
	})
	if err != nil {
		return fmt.Errorf("keys of %s: %w", k.issuer, err)
	}
	kf, err := keyfunc.New(keyfunc.Options{Ctx: ctx, Storage: client, UseWhitelist: []jwkset.USE{jwkset.UseSig, ""}})
	if err != nil {
		return fmt.Errorf("keys of %s: %w", k.issuer, err)
	}
	k.kf.Store(&kf)
	k.cfg.Logger.InfoContext(ctx, "oidc: issuer discovered, keys fetched", "issuer", k.issuer, "jwks_uri", doc.JWKSURI)
	return nil
}

// fail notes a discovery or fetch failure.
func (k *issuerKeys) fail(err error) {
	k.mu.Lock()
	k.lastErr, k.lastErrAt = err, k.cfg.Now()
	k.mu.Unlock()
}

// lastFailure is the last failure noted and when.
func (k *issuerKeys) lastFailure() (error, time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.lastErr, k.lastErrAt
}

// usable is nil when the keys may verify tokens now, else an error that is
// ErrProviderUnavailable, naming the issuer and the last failure.
func (k *issuerKeys) usable() error {
	fetched := k.store.fetched()
	last, _ := k.lastFailure()
	switch {
	case k.kf.Load() == nil || fetched.IsZero():
		return fmt.Errorf("%w: issuer %s: its keys were not fetched yet (%v)", ErrProviderUnavailable, k.issuer, last)
	case k.cfg.Now().Sub(fetched) > k.cfg.JWKSMaxAge:
		return fmt.Errorf("%w: issuer %s: its keys were fetched last at %s, longer ago than their maximum age %s (%v)",
			ErrProviderUnavailable, k.issuer, fetched.UTC().Format(time.RFC3339), k.cfg.JWKSMaxAge, last)
	}
	return nil
}

// keyfunc is golang-jwt's key lookup for the issuer's keys.
func (k *issuerKeys) keyfunc(ctx context.Context) jwt.Keyfunc {
	return (*k.kf.Load()).KeyfuncCtx(ctx)
}

// refusal classifies a verification error. A kid still unknown after a
// fetch that failed is not the token's fault: the provider could not be
// asked (ErrProviderUnavailable).
func (k *issuerKeys) refusal(err error) error {
	reason := reasonOf(err)
	if reason == ReasonUnknownKey {
		if last, at := k.lastFailure(); last != nil && !at.Before(k.store.fetched()) {
			return fmt.Errorf("%w: issuer %s: the token's key is not among the keys fetched last, and fetching them again failed (%v)",
				ErrProviderUnavailable, k.issuer, last)
		}
	}
	return refuse(reason, err)
}

// stampedStorage is jwkset's memory storage that notes when its keys were
// last replaced: jwkset replaces them only after a successful fetch.
type stampedStorage struct {
	jwkset.Storage
	now func() time.Time
	// at is the time of the last replacement (unix nanoseconds, 0: never).
	at atomic.Int64
}

// KeyReplaceAll replaces the keys and notes the time.
func (s *stampedStorage) KeyReplaceAll(ctx context.Context, given []jwkset.JWK) error {
	if err := s.Storage.KeyReplaceAll(ctx, given); err != nil {
		return err
	}
	s.at.Store(s.now().UnixNano())
	return nil
}

// fetched is when the keys were last fetched (zero: never).
func (s *stampedStorage) fetched() time.Time {
	at := s.at.Load()
	if at == 0 {
		return time.Time{}
	}
	return time.Unix(0, at)
}
