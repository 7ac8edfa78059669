package receipt

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/go-jose/go-jose/v4"
)

// MaxLen is the longest receipt Verify reads, in bytes.
const MaxLen = 8 << 10

// Verify checks token, a receipt, against keys (the gateway's JWK set) and
// returns its claims. It refuses, wrapping the sentinel: a token that is not
// three strict base64url segments or whose alg is not EdDSA (ErrMalformed:
// none, HS256 and every other algorithm); a kid that is missing or names no
// public Ed25519 key of keys, such as a retired key (ErrUnknownKey); a
// signature that does not verify, such as after one byte changed anywhere
// (ErrBadSignature); a payload Claims.Validate refuses (ErrInvalidClaims).
// It does no I/O.
func Verify(token string, keys jose.JSONWebKeySet) (Claims, error) {
	if err := strictSegments(token); err != nil {
		return Claims{}, err
	}
	jws, err := jose.ParseSignedCompact(token, []jose.SignatureAlgorithm{Algorithm})
	if err != nil {
		return Claims{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if len(jws.Signatures) != 1 {
		return Claims{}, fmt.Errorf("%w: %d signatures, want 1", ErrMalformed, len(jws.Signatures))
	}
	kid := jws.Signatures[0].Protected.KeyID
	pub, err := publicKey(keys, kid)
	if err != nil {
		return Claims{}, err
	}
	payload, err := jws.Verify(pub)
	if err != nil {
		return Claims{}, fmt.Errorf("%w (kid %q): %v", ErrBadSignature, kid, err)
	}
	var c Claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return Claims{}, fmt.Errorf("%w: payload: %v", ErrInvalidClaims, err)
	}
	if err := c.Validate(); err != nil {
		return Claims{}, err
	}
	c.FinalizedAt = c.FinalizedAt.UTC()
	return c, nil
}

// strictSegments refuses a token that is not three base64url segments
// without padding, each in its one canonical spelling: a character whose
// change only touches a segment's unused trailing bits is a changed byte
// too, and must not verify.
func strictSegments(token string) error {
	if len(token) > MaxLen {
		return fmt.Errorf("%w: %d bytes, at most %d", ErrMalformed, len(token), MaxLen)
	}
	segs := strings.Split(token, ".")
	if len(segs) != 3 {
		return fmt.Errorf("%w: %d segments, a compact JWS has 3", ErrMalformed, len(segs))
	}
	for i, seg := range segs {
		if _, err := base64.RawURLEncoding.Strict().DecodeString(seg); err != nil || seg == "" {
			return fmt.Errorf("%w: segment %d is not strict base64url", ErrMalformed, i+1)
		}
	}
	return nil
}

// publicKey is the one public Ed25519 key of keys named kid.
func publicKey(keys jose.JSONWebKeySet, kid string) (ed25519.PublicKey, error) {
	if kid == "" {
		return nil, fmt.Errorf("%w: the header has no kid", ErrUnknownKey)
	}
	found := keys.Key(kid)
	if len(found) != 1 {
		return nil, fmt.Errorf("%w: kid %q matches %d keys", ErrUnknownKey, kid, len(found))
	}
	k := found[0]
	pub, ok := k.Key.(ed25519.PublicKey)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: kid %q is a %T, not a public Ed25519 key", ErrUnknownKey, kid, k.Key)
	case k.Algorithm != "" && k.Algorithm != string(Algorithm):
		return nil, fmt.Errorf("%w: kid %q is for alg %q, not %s", ErrUnknownKey, kid, k.Algorithm, Algorithm)
	case k.Use != "" && k.Use != "sig":
		return nil, fmt.Errorf("%w: kid %q is for use %q, not sig", ErrUnknownKey, kid, k.Use)
	}
	return pub, nil
}
