// Package auth turns a bearer token into an Identity: the subject every
// fingerprint is bound to, and a role (agent or operator). The subject always
// comes from the token, never from a request body.
package auth

import (
	"context"
	"errors"
	"fmt"
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
	// Subject is the authenticated caller, such as alice.
	Subject string `json:"subject" yaml:"subject"`
	// Role is RoleAgent or RoleOperator.
	Role string `json:"role" yaml:"role"`
}

// IsOperator reports whether the identity has the operator role.
func (i Identity) IsOperator() bool { return i.Role == RoleOperator }

// Authenticator verifies a bearer token.
type Authenticator interface {
	// Authenticate returns the identity of token, or an error wrapping
	// ErrUnauthenticated.
	Authenticate(ctx context.Context, bearerToken string) (Identity, error)
}

// Chain tries each authenticator in order and returns the first identity.
type Chain []Authenticator

var _ Authenticator = Chain(nil)

// Authenticate implements Authenticator.
func (c Chain) Authenticate(ctx context.Context, token string) (Identity, error) {
	if token == "" {
		return Identity{}, fmt.Errorf("%w: no token", ErrUnauthenticated)
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
