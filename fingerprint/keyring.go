package fingerprint

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"sync"

	"github.com/oncegate/oncegate/internal/keyspec"
)

// MinSecretBytes is the shortest accepted HMAC secret.
const MinSecretBytes = 16

// Key is one HMAC-SHA256 key of a Keyring.
type Key struct {
	// ID names the key in a fingerprint's `k`: 1 to 64 of A-Z a-z 0-9 . _ -.
	ID string
	// Secret is the HMAC key (the base64-decoded secret), at least
	// MinSecretBytes long.
	Secret []byte
}

// Keyring holds the signing key and every verification key. The first key
// signs; all keys verify (rotation: add the new key first, keep the old one
// listed until its fingerprints have expired). A Keyring is safe for
// concurrent use.
type Keyring struct {
	signer *keyEntry
	byID   map[string]*keyEntry
	ids    []string
}

// keyEntry is one key with a pool of HMAC states keyed with its secret.
type keyEntry struct {
	id   string
	pool sync.Pool // of *macState
}

// macState is a reusable HMAC with room for its sum and for the
// fingerprint Sign writes before it becomes a string.
type macState struct {
	h   hash.Hash
	sum [sha256.Size]byte
	out []byte
}

func newKeyEntry(id string, secret []byte) *keyEntry {
	secret = append([]byte(nil), secret...)
	e := &keyEntry{id: id}
	e.pool.New = func() any {
		return &macState{h: hmac.New(sha256.New, secret)}
	}
	return e
}

// get returns a reset HMAC state keyed with e's secret; put it back after use.
func (e *keyEntry) get() *macState {
	st := e.pool.Get().(*macState)
	st.h.Reset()
	return st
}

func (e *keyEntry) put(st *macState) { e.pool.Put(st) }

// NewKeyring returns a Keyring whose first key signs and whose keys all
// verify. It refuses no keys, a duplicate or malformed id, and a secret
// shorter than MinSecretBytes. The secrets are copied.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("keyring: no keys")
	}
	k := &Keyring{byID: make(map[string]*keyEntry, len(keys))}
	for i, key := range keys {
		if !keyspec.ValidID(key.ID) {
			return nil, fmt.Errorf("keyring: key %d: id %q must be 1 to %d of A-Z a-z 0-9 . _ -", i+1, key.ID, keyspec.MaxIDLen)
		}
		if _, dup := k.byID[key.ID]; dup {
			return nil, fmt.Errorf("keyring: duplicate key id %q", key.ID)
		}
		if len(key.Secret) < MinSecretBytes {
			return nil, fmt.Errorf("keyring: key %q: secret is %d bytes, at least %d are required", key.ID, len(key.Secret), MinSecretBytes)
		}
		e := newKeyEntry(key.ID, key.Secret)
		k.byID[key.ID] = e
		k.ids = append(k.ids, key.ID)
		if i == 0 {
			k.signer = e
		}
	}
	return k, nil
}

// ParseKeyring parses the ONCEGATE_FINGERPRINT_KEYS form
// `kid:base64secret[,kid:base64secret...]` (keyspec.Parse: standard base64
// with padding, unpadded and URL-safe variants too; blank entries refused),
// refusing also the cases NewKeyring refuses.
func ParseKeyring(spec string) (*Keyring, error) {
	entries, err := keyspec.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("parse keyring: %w", err)
	}
	keys := make([]Key, len(entries))
	for i, e := range entries {
		keys[i] = Key{ID: e.ID, Secret: e.Secret}
	}
	k, err := NewKeyring(keys...)
	if err != nil {
		return nil, fmt.Errorf("parse keyring: %w", err)
	}
	return k, nil
}

// SigningKeyID returns the id of the key that signs.
func (k *Keyring) SigningKeyID() string { return k.signer.id }

// KeyIDs returns the ids of all keys, the signing key first.
func (k *Keyring) KeyIDs() []string { return append([]string(nil), k.ids...) }

// NewNonce returns 128 random bits from crypto/rand as 32 lowercase hex
// chars: a fingerprint's `n` and the operation_id.
func NewNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Sign sets p.KeyID to the signing key's id and returns the fingerprint
// B64(payload_json) + "." + B64(HMAC_SHA256(secret, B64(payload_json))),
// B64 being base64url without padding. The payload JSON is written by
// appendPayload in the fixed order n, exp, u, s, p, k, then r and a only when set.
// Sign refuses a payload that Parse would refuse (wrapping ErrInvalid), so
// everything it returns parses back to p.
func (k *Keyring) Sign(p Payload) (string, error) {
	p.KeyID = k.signer.id
	if err := p.validate(); err != nil {
		return "", fmt.Errorf("sign: %w", err)
	}
	var pb [256]byte
	payload := appendPayload(pb[:0], &p)
	enc := base64.RawURLEncoding
	st := k.signer.get()
	defer k.signer.put(st)
	out := enc.AppendEncode(st.out[:0], payload)
	st.h.Write(out)
	sum := st.h.Sum(st.sum[:0])
	out = append(out, '.')
	out = enc.AppendEncode(out, sum)
	st.out = out // its room, grown, serves the next Sign
	if len(out) > MaxFingerprintLen {
		return "", fmt.Errorf("sign: %w: fingerprint is %d bytes, more than %d", ErrInvalid, len(out), MaxFingerprintLen)
	}
	return string(out), nil
}

// IsNonce reports whether s is shaped like a nonce, and so like an
// operation_id: 32 lowercase hex characters. The gateway asks it on every
// status poll and answer, where a regexp cost a few percent of the CPU.
func IsNonce(s string) bool { return isLowerHex(s, 32) }
