package auth

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Reason is why a bearer token was refused: one fixed word that the log,
// the answer's detail and the WWW-Authenticate header's error_description
// are chosen by (RFC 6750 §3.1: the token was presented, so the error is
// invalid_token whatever the reason).
type Reason string

// The reasons a token is refused, from the least to the most specific: when
// several authenticators refuse one token (a Chain), the answer names the
// most specific reason any of them found (Explain).
const (
	// ReasonUnknown: no authenticator knows the token (not a token of the
	// token file, not a JWT any configured key or issuer accepts).
	ReasonUnknown Reason = "unknown"
	// ReasonMalformed: the token is not a well-formed JWT.
	ReasonMalformed Reason = "malformed"
	// ReasonIssuer: the token's iss is not a configured issuer.
	ReasonIssuer Reason = "wrong_issuer"
	// ReasonAlgorithm: the token's alg is not in the allow-list ("none"
	// and every HMAC algorithm never are, for an issuer's public keys).
	ReasonAlgorithm Reason = "algorithm_not_accepted"
	// ReasonUnknownKey: the token's kid names no key the issuer publishes,
	// even after the keys were fetched again.
	ReasonUnknownKey Reason = "unknown_key"
	// ReasonSignature: the signature does not verify with the issuer's key.
	ReasonSignature Reason = "bad_signature"
	// ReasonAudience: the token is not meant for this resource (aud).
	ReasonAudience Reason = "wrong_audience"
	// ReasonExpired: the token's exp has passed (beyond the leeway).
	ReasonExpired Reason = "expired"
	// ReasonNotYetValid: the token's nbf or iat is in the future (beyond
	// the leeway).
	ReasonNotYetValid Reason = "not_yet_valid"
	// ReasonClaims: the token verified but lacks what an identity needs
	// (the subject claim, an accepted typ, a known role).
	ReasonClaims Reason = "claims"
)

// rank orders the reasons by specificity (Explain keeps the highest).
var rank = map[Reason]int{
	ReasonUnknown: 0, ReasonMalformed: 1, ReasonIssuer: 2, ReasonAlgorithm: 3, ReasonUnknownKey: 4,
	ReasonSignature: 5, ReasonAudience: 6, ReasonExpired: 7, ReasonNotYetValid: 7, ReasonClaims: 8,
}

// descriptions are the error_description of each reason: short, ASCII
// (RFC 6750 §3 allows no other characters there), and true of the token.
var descriptions = map[Reason]string{
	ReasonUnknown:     "the token is not known",
	ReasonMalformed:   "the token is not a well-formed JWT",
	ReasonIssuer:      "the token was not issued by an accepted issuer",
	ReasonAlgorithm:   "the token's signing algorithm is not accepted",
	ReasonUnknownKey:  "the token is signed with a key its issuer does not publish",
	ReasonSignature:   "the token's signature does not verify",
	ReasonAudience:    "the token is not meant for this resource (audience)",
	ReasonExpired:     "the token has expired",
	ReasonNotYetValid: "the token is not valid yet",
	ReasonClaims:      "the token lacks a claim the gateway needs",
}

// Reasons are every reason, sorted.
func Reasons() []Reason { return slices.Sorted(maps.Keys(rank)) }

// Description is the reason's error_description.
func (r Reason) Description() string { return descriptions[r] }

// TokenError is a refused token: why (Reason) and the library's own error.
// It is ErrUnauthenticated (errors.Is).
type TokenError struct {
	// Reason is why the token was refused.
	Reason Reason
	// Err is the underlying error, for the log.
	Err error
}

// refuse builds a TokenError.
func refuse(reason Reason, err error) *TokenError { return &TokenError{Reason: reason, Err: err} }

// Error implements error.
func (e *TokenError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("%s: %s", ErrUnauthenticated, e.Reason.Description())
	}
	return fmt.Sprintf("%s: %s: %v", ErrUnauthenticated, e.Reason.Description(), e.Err)
}

// Unwrap returns the underlying error.
func (e *TokenError) Unwrap() error { return e.Err }

// Is makes a TokenError match ErrUnauthenticated.
func (e *TokenError) Is(target error) bool { return target == ErrUnauthenticated }

// ErrProviderUnavailable is returned when a token names an accepted issuer
// whose keys cannot be had: not fetched yet (the provider was down since
// the gateway started), or cached longer than their maximum age because the
// provider stopped answering. The token may well be good: the same request
// can succeed once the provider answers again (temporarily_unavailable,
// not unauthenticated).
var ErrProviderUnavailable = errors.New("auth: the identity provider cannot be reached to verify the token")

// Explain returns the most specific reason err gives for refusing a token
// (a Chain joins the refusals of each authenticator); ReasonUnknown when it
// names none.
func Explain(err error) Reason {
	best := ReasonUnknown
	var walk func(error)
	walk = func(e error) {
		if te, ok := e.(*TokenError); ok && rank[te.Reason] > rank[best] {
			best = te.Reason
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, inner := range u.Unwrap() {
				walk(inner)
			}
		case interface{ Unwrap() error }:
			if inner := u.Unwrap(); inner != nil {
				walk(inner)
			}
		}
	}
	if err != nil {
		walk(err)
	}
	return best
}
