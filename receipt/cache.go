package receipt

import (
	"encoding/json"
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// CacheSize is how many receipts a gateway's Cache keeps: the terminal
// outcomes replayed or polled most recently (each entry about a kilobyte).
const CacheSize = 4096

// Cache keeps the receipts a Keyring signed, so that a replay or a status
// poll of an outcome does not sign it again, nor even encode its payload.
// A receipt is a deterministic function of its signing key and its claims
// (Ed25519 is deterministic and neither the header nor the claims carry a
// time or nonce of their own), so a cached receipt is byte for byte the one
// Sign would return. An entry is keyed by the signing key's id and every
// claim, FinalizedAt as the millisecond the payload states: a receipt is
// never served for other claims (another outcome, reference or time of the
// same operation), nor under another signing key (after a rotation the new
// first key signs anew). Bounded (least recently used out first) and safe
// for concurrent use.
type Cache struct {
	entries *lru.Cache[cacheKey, string]
}

// cacheKey names one receipt: the key that signs it and what it signs.
// claims are normalized with a zero FinalizedAt, which finalizedMS holds,
// so that equal keys are equal payloads.
type cacheKey struct {
	kid         string
	claims      Claims
	finalizedMS int64
}

// NewCache returns a Cache of at most size receipts (size > 0).
func NewCache(size int) (*Cache, error) {
	entries, err := lru.New[cacheKey, string](size)
	if err != nil {
		return nil, fmt.Errorf("receipt cache: %w", err)
	}
	return &Cache{entries: entries}, nil
}

// Sign returns k.Sign(c), from the cache when k's signing key signed the
// same claims before (claims Validate refuses are never cached, so never
// found).
func (cache *Cache) Sign(k *Keyring, c Claims) (string, error) {
	key := cacheKey{kid: k.SigningKeyID(), claims: c.normalized()}
	key.finalizedMS = key.claims.FinalizedAt.UnixMilli()
	key.claims.FinalizedAt = time.Time{}
	if jws, ok := cache.entries.Get(key); ok {
		return jws, nil
	}
	payload, err := payloadOf(c)
	if err != nil {
		return "", err
	}
	jws, err := k.signPayload(c.OperationID, payload)
	if err != nil {
		return "", err
	}
	cache.entries.Add(key, jws)
	return jws, nil
}

// payloadOf is the JSON a receipt of c signs, refusing claims Validate
// refuses.
func payloadOf(c Claims) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("sign receipt: %w", err)
	}
	payload, err := json.Marshal(c.normalized())
	if err != nil {
		return nil, fmt.Errorf("sign receipt %s: %w", c.OperationID, err)
	}
	return payload, nil
}
