package receipt

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/go-jose/go-jose/v4"

	"github.com/oncegate/oncegate/internal/keyspec"
)

// Algorithm is the one signature algorithm of receipts (RFC 8037: EdDSA
// over Ed25519).
const Algorithm = jose.EdDSA

// JWKSPath is where a gateway serves the JWK set of its receipt keys.
const JWKSPath = "/.well-known/jwks.json"

// Key is one Ed25519 key of a Keyring.
type Key struct {
	// ID names the key in a receipt's kid and in the JWK set: 1 to 64 of
	// A-Z a-z 0-9 . _ -.
	ID string
	// Seed is the Ed25519 private key's seed (RFC 8032), ed25519.SeedSize
	// bytes.
	Seed []byte
}

// Keyring holds the signing key and every listed key's public half. The
// first key signs; every key is published and verifies (rotation: add the
// new key first, keep the old one listed as long as its receipts must
// verify; a key removed from the list is retired and its receipts are
// refused). A Keyring is safe for concurrent use.
type Keyring struct {
	signer jose.Signer
	ids    []string
	seeds  [][]byte
	public jose.JSONWebKeySet
}

// NewKeyring returns a Keyring whose first key signs and whose keys are all
// published. It refuses no keys, a malformed or duplicate id, and a seed
// that is not ed25519.SeedSize bytes.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("receipt keyring: no keys")
	}
	k := &Keyring{}
	for i, key := range keys {
		if !keyspec.ValidID(key.ID) {
			return nil, fmt.Errorf("receipt keyring: key %d: id %q must be 1 to %d of A-Z a-z 0-9 . _ -", i+1, key.ID, keyspec.MaxIDLen)
		}
		if len(k.public.Key(key.ID)) > 0 {
			return nil, fmt.Errorf("receipt keyring: duplicate key id %q", key.ID)
		}
		if len(key.Seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("receipt keyring: key %q: seed is %d bytes, an Ed25519 seed is %d", key.ID, len(key.Seed), ed25519.SeedSize)
		}
		priv := ed25519.NewKeyFromSeed(key.Seed)
		if i == 0 {
			signer, err := jose.NewSigner(jose.SigningKey{Algorithm: Algorithm, Key: jose.JSONWebKey{Key: priv, KeyID: key.ID}}, nil)
			if err != nil {
				return nil, fmt.Errorf("receipt keyring: key %q: %w", key.ID, err)
			}
			k.signer = signer
		}
		k.ids = append(k.ids, key.ID)
		k.seeds = append(k.seeds, append([]byte(nil), key.Seed...))
		k.public.Keys = append(k.public.Keys, jose.JSONWebKey{
			Key: priv.Public(), KeyID: key.ID, Algorithm: string(Algorithm), Use: "sig",
		})
	}
	return k, nil
}

// ParseKeyring parses the ONCEGATE_RECEIPT_KEYS form
// `kid:base64seed[,kid:base64seed...]` (keyspec.Parse), each seed the 32
// bytes of an Ed25519 private key, refusing also what NewKeyring refuses.
func ParseKeyring(spec string) (*Keyring, error) {
	entries, err := keyspec.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("parse receipt keyring: %w", err)
	}
	keys := make([]Key, len(entries))
	for i, e := range entries {
		keys[i] = Key{ID: e.ID, Seed: e.Secret}
	}
	k, err := NewKeyring(keys...)
	if err != nil {
		return nil, fmt.Errorf("parse receipt keyring: %w", err)
	}
	return k, nil
}

// Derive returns, for each key in order (the signing key first), a key of
// the same id whose seed is derived from its seed for purpose (HKDF-SHA256,
// purpose as the info): another statement's keys, which never sign a
// receipt, rotated with the receipt keys.
func (k *Keyring) Derive(purpose string) ([]Key, error) {
	out := make([]Key, len(k.ids))
	for i, id := range k.ids {
		seed, err := hkdf.Key(sha256.New, k.seeds[i], nil, purpose, ed25519.SeedSize)
		if err != nil {
			return nil, fmt.Errorf("derive %s key %q: %w", purpose, id, err)
		}
		out[i] = Key{ID: id, Seed: seed}
	}
	return out, nil
}

// SigningKeyID returns the id of the key that signs.
func (k *Keyring) SigningKeyID() string { return k.ids[0] }

// KeyIDs returns the ids of all keys, the signing key first.
func (k *Keyring) KeyIDs() []string { return append([]string(nil), k.ids...) }

// JWKS returns the public keys as a JWK set (RFC 7517), the signing key
// first: each with kty OKP, crv Ed25519, x, kid, alg EdDSA and use sig.
// What GET /.well-known/jwks.json serves and Verify takes.
func (k *Keyring) JWKS() jose.JSONWebKeySet {
	return jose.JSONWebKeySet{Keys: append([]jose.JSONWebKey(nil), k.public.Keys...)}
}

// Sign returns the receipt of c: the compact JWS with header
// {"alg":"EdDSA","kid":<signing key id>} over the JSON of c (FinalizedAt in
// UTC, to the millisecond). It refuses claims Validate refuses. The same
// key and claims always give the same bytes.
func (k *Keyring) Sign(c Claims) (string, error) {
	payload, err := payloadOf(c)
	if err != nil {
		return "", err
	}
	return k.signPayload(c.OperationID, payload)
}

// signPayload signs payload, the JSON of operation opID's claims, with the
// signing key.
func (k *Keyring) signPayload(opID string, payload []byte) (string, error) {
	jws, err := k.signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("sign receipt %s: %w", opID, err)
	}
	out, err := jws.CompactSerialize()
	if err != nil {
		return "", fmt.Errorf("sign receipt %s: %w", opID, err)
	}
	return out, nil
}
