// Package auth turns a bearer token into an Identity: the subject every
// fingerprint is bound to, and a role (agent or operator). The subject always
// comes from the token, never from a request body.
package auth

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Roles known to the gateway.
const (
	// RoleAgent may preview, confirm and query its own operations.
	RoleAgent = "agent"
	// RoleOperator may also list and resolve every operation.
	RoleOperator = "operator"
)

// ErrUnauthenticated is returned when a token is missing, unknown, expired or
// otherwise not acceptable.
var ErrUnauthenticated = errors.New("auth: unauthenticated")

// Identity is who a token belongs to.
type Identity struct {
	// Subject is the authenticated caller, such as alice: the one every
	// fingerprint is bound to.
	Subject string `json:"subject" yaml:"subject"`
	// Role is RoleAgent or RoleOperator.
	Role string `json:"role" yaml:"role"`
	// Roles are the roles (or groups) the identity provider names in the
	// token's roles claim, as given; Role is RoleOperator when they hold
	// the configured operator role. Empty for the token file and the
	// static JWT keys.
	Roles []string `json:"roles,omitempty" yaml:"roles,omitempty"`
	// Client is the acting client: the OAuth client (client_id, else azp)
	// the token was issued to, which acts for Subject ("who acted for
	// whom"). Empty when the token names none.
	Client string `json:"client,omitempty" yaml:"client,omitempty"`
	// Scopes are the token's OAuth scopes (scope, space-separated, or
	// scp, an array). Scoped reports whether they are to be checked.
	Scopes []string `json:"scopes,omitempty" yaml:"scopes,omitempty"`
	// Issuer is the OIDC issuer that signed the token; empty for the token
	// file and the static JWT keys.
	Issuer string `json:"issuer,omitempty" yaml:"-"`
}

// IsOperator reports whether the identity has the operator role.
func (i Identity) IsOperator() bool { return i.Role == RoleOperator }

// Scoped reports whether the identity's scopes are checked: a token of an
// identity provider (OIDC) carries the scopes it was granted, and a route
// that needs one refuses it without (insufficient_scope). The token file
// and the static JWT keys predate scopes: their identities may do all
// their role allows.
func (i Identity) Scoped() bool { return i.Issuer != "" }

// HasScope reports whether the identity may act with scope: always for an
// identity whose scopes are not checked (Scoped), else when its token was
// granted it.
func (i Identity) HasScope(scope string) bool {
	return !i.Scoped() || slices.Contains(i.Scopes, scope)
}

// MissingScopes returns those of scopes the identity lacks (HasScope), in
// their order.
func (i Identity) MissingScopes(scopes []string) []string {
	var missing []string
	for _, s := range scopes {
		if !i.HasScope(s) {
			missing = append(missing, s)
		}
	}
	return missing
}

// identityKey keys the verified identity in a context.
type identityKey struct{}

// WithIdentity returns ctx carrying id, an identity already verified (the
// MCP endpoint verifies its token, bound to the MCP resource, and the
// tools then act with that identity).
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the identity WithIdentity put in ctx.
func IdentityFrom(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// Ready reports whether a can verify tokens now: an Authenticator that
// depends on something remote (an identity provider's keys) says so with a
// Ready method; any other is always ready.
func Ready(ctx context.Context, a Authenticator) error {
	if r, ok := a.(interface{ Ready(context.Context) error }); ok {
		return r.Ready(ctx)
	}
	return nil
}

// Authenticator verifies a bearer token.
type Authenticator interface {
	// Authenticate returns the identity of token, or an error wrapping
	// ErrUnauthenticated.
	Authenticate(ctx context.Context, bearerToken string) (Identity, error)
}

// Chain tries each authenticator in order and returns the first identity.
type Chain []Authenticator

var _ Authenticator = Chain(nil)

// Ready reports the first member that is not ready (auth.Ready).
func (c Chain) Ready(ctx context.Context) error {
	for _, a := range c {
		if err := Ready(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// Authenticate implements Authenticator.
func (c Chain) Authenticate(ctx context.Context, token string) (Identity, error) {
	if token == "" {
		return Identity{}, refuse(ReasonUnknown, errors.New("no token"))
	}
	var errs []error
	for _, a := range c {
		id, err := a.Authenticate(ctx, token)
		if err == nil {
			return id, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return Identity{}, fmt.Errorf("%w: no authenticator configured", ErrUnauthenticated)
	}
	return Identity{}, fmt.Errorf("%w: %w", ErrUnauthenticated, errors.Join(errs...))
}
