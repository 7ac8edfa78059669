package auth

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"

	"gopkg.in/yaml.v3"
)

// Tokens authenticates static bearer tokens from a file (the dev identities
// of docs/contract.md §1). Tokens are kept as SHA-256 digests so that a lookup does
// not compare the secret byte by byte.
type Tokens struct {
	byDigest map[[sha256.Size]byte]Identity
}

var _ Authenticator = (*Tokens)(nil)

// tokenFile is the YAML form: tokens: {<token>: {subject: ..., role: ...}}.
type tokenFile struct {
	Tokens map[string]Identity `yaml:"tokens"`
}

// NewTokens builds a Tokens authenticator from token → identity. An empty
// role is RoleAgent; an empty subject or an unknown role is an error.
func NewTokens(tokens map[string]Identity) (*Tokens, error) {
	t := &Tokens{byDigest: make(map[[sha256.Size]byte]Identity, len(tokens))}
	for tok, id := range tokens {
		if tok == "" || id.Subject == "" {
			return nil, fmt.Errorf("token %q: token and subject are required", redact(tok))
		}
		if id.Role == "" {
			id.Role = RoleAgent
		}
		if id.Role != RoleAgent && id.Role != RoleOperator {
			return nil, fmt.Errorf("token %q: unknown role %q (want %s or %s)", redact(tok), id.Role, RoleAgent, RoleOperator)
		}
		t.byDigest[sha256.Sum256([]byte(tok))] = id
	}
	return t, nil
}

// LoadTokens reads a token file such as deployments/tokens.dev.yaml.
func LoadTokens(path string) (*Tokens, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load tokens: %w", err)
	}
	var f tokenFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("load tokens %s: %w", path, err)
	}
	t, err := NewTokens(f.Tokens)
	if err != nil {
		return nil, fmt.Errorf("load tokens %s: %w", path, err)
	}
	return t, nil
}

// Authenticate implements Authenticator.
func (t *Tokens) Authenticate(_ context.Context, token string) (Identity, error) {
	id, ok := t.byDigest[sha256.Sum256([]byte(token))]
	if !ok {
		return Identity{}, refuse(ReasonUnknown, errors.New("unknown token"))
	}
	return id, nil
}

// redact keeps a token's first characters for error messages.
func redact(tok string) string {
	if len(tok) <= 4 {
		return "****"
	}
	return tok[:4] + "****"
}
