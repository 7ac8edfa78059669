// Package keyspec parses the key lists the gateway reads from its
// environment, `kid:base64[,kid:base64...]` (ONCEGATE_FINGERPRINT_KEYS,
// ONCEGATE_RECEIPT_KEYS): one shape for every rotating keyring, where the
// first key signs and every listed key verifies. It checks the shape only;
// what a key's bytes must be is the keyring's business.
package keyspec

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// MaxIDLen bounds a key id.
const MaxIDLen = 64

// Entry is one `kid:base64` entry of a key list.
type Entry struct {
	// ID is the key id, valid by ValidID.
	ID string
	// Secret is the base64-decoded key material.
	Secret []byte
}

// Parse parses spec, `kid:base64[,kid:base64...]`, in order. The base64 is
// standard with padding; unpadded and URL-safe variants are accepted too.
// It refuses an empty spec, a blank entry, an entry without a colon, an id
// ValidID refuses, a duplicate id and a secret that is empty or not base64,
// naming the entry.
func Parse(spec string) ([]Entry, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, errors.New("no keys")
	}
	var out []Entry
	seen := map[string]bool{}
	for i, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		id, secret, ok := strings.Cut(entry, ":")
		if !ok {
			return nil, fmt.Errorf("entry %d: want kid:base64secret", i+1)
		}
		if !ValidID(id) {
			return nil, fmt.Errorf("entry %d: id %q must be 1 to %d of A-Z a-z 0-9 . _ -", i+1, id, MaxIDLen)
		}
		if seen[id] {
			return nil, fmt.Errorf("duplicate key id %q", id)
		}
		seen[id] = true
		raw, err := DecodeBase64(secret)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", id, err)
		}
		out = append(out, Entry{ID: id, Secret: raw})
	}
	return out, nil
}

// DecodeBase64 decodes a key in any of the four common base64 variants.
func DecodeBase64(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("empty secret")
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.Strict().DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("secret is not base64")
}

// ValidID reports whether id is 1 to MaxIDLen of A-Z a-z 0-9 . _ -.
func ValidID(id string) bool {
	if id == "" || len(id) > MaxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
