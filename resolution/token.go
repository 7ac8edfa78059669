// Package resolution signs and verifies the resolution token: the
// gateway's statement that an authenticated operator made one decision
// about one operation waiting for manual review. The operation workflow
// accepts a decision only with a valid token (docs/contract.md, "The
// resolution token"), so a decision sent to Temporal directly (the Web UI,
// temporal workflow signal) without one changes nothing.
package resolution

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/oncegate/oncegate/operation"
	"github.com/oncegate/oncegate/receipt"
)

// Purpose derives the resolution keys from the receipt keys
// (receipt.Keyring.Derive): no setting of their own, rotated with them.
const Purpose = "oncegate resolution token v1"

// TTL is how long a token is valid after it was issued.
const TTL = 10 * time.Minute

// ClockSkew is how far in the future a token's issued_at may be when the
// workflow reads it (the gateway's clock ahead of the workflow task's).
const ClockSkew = time.Minute

// signingPrefix separates what a resolution key signs from any other
// statement.
const signingPrefix = "oncegate-resolution-v1."

// Statement is what a token states: who decided what about which
// operation, and when the statement expires.
type Statement struct {
	// ID is the token's unique id (random, hex).
	ID string `json:"jti"`
	// OperationID is the operation decided.
	OperationID string `json:"operation_id"`
	// Outcome is the decision: completed or failed.
	Outcome operation.ResolutionOutcome `json:"outcome"`
	// ResultSHA256 is the hex SHA-256 of the compacted result of a
	// completed decision; empty for failed.
	ResultSHA256 string `json:"result_sha256,omitempty"`
	// Reason is a failed decision's reason.
	Reason string `json:"reason,omitempty"`
	// Note is the operator's free note.
	Note string `json:"note,omitempty"`
	// EvidenceURL links the operator's evidence.
	EvidenceURL string `json:"evidence_url,omitempty"`
	// Operator is the authenticated operator (the ops API's verified
	// identity), the one the decision is recorded under.
	Operator string `json:"operator"`
	// IssuedAt is when the gateway issued it.
	IssuedAt time.Time `json:"issued_at"`
	// ExpiresAt is when it stops being valid.
	ExpiresAt time.Time `json:"expires_at"`
}

// Errors Verify wraps, one per reason a token is refused.
var (
	// ErrMissing: the decision carries no token.
	ErrMissing = errors.New("resolution token missing")
	// ErrMalformed: the token is not payload.signature in base64url, or
	// its payload is not a statement.
	ErrMalformed = errors.New("resolution token malformed")
	// ErrUnknownKey: no listed key has the token's key id.
	ErrUnknownKey = errors.New("resolution token signed by an unknown key")
	// ErrForged: the signature does not verify.
	ErrForged = errors.New("resolution token signature invalid")
	// ErrExpired: the token expired (or was issued in the future).
	ErrExpired = errors.New("resolution token expired")
	// ErrOtherOperation: the token is about another operation.
	ErrOtherOperation = errors.New("resolution token is for another operation")
	// ErrOtherDecision: the token states another outcome, result, reason,
	// note or evidence than the decision carries.
	ErrOtherDecision = errors.New("resolution token states another decision")
)

// Signer issues tokens signed by every one of its keys (each signature
// named by its key id), so that an operation started under an older key
// still verifies its decision. Safe for concurrent use.
type Signer struct {
	keys   []ed25519.PrivateKey
	public []operation.ResolutionKey
}

// NewSigner returns a Signer that signs with every key (a workflow started
// before a rotation knows only the keys listed then); it refuses no keys or a seed that is not ed25519.SeedSize bytes.
func NewSigner(keys ...receipt.Key) (*Signer, error) {
	if len(keys) == 0 {
		return nil, errors.New("resolution signer: no keys")
	}
	s := &Signer{}
	for _, k := range keys {
		if len(k.Seed) != ed25519.SeedSize {
			return nil, fmt.Errorf("resolution signer: key %q: seed is %d bytes, an Ed25519 seed is %d", k.ID, len(k.Seed), ed25519.SeedSize)
		}
		priv := ed25519.NewKeyFromSeed(k.Seed)
		s.keys = append(s.keys, priv)
		s.public = append(s.public, operation.ResolutionKey{ID: k.ID, PublicKey: priv.Public().(ed25519.PublicKey)})
	}
	return s, nil
}

// SignerOf returns the Signer of the keys derived from a receipt keyring.
func SignerOf(receipts *receipt.Keyring) (*Signer, error) {
	keys, err := receipts.Derive(Purpose)
	if err != nil {
		return nil, fmt.Errorf("resolution signer: %w", err)
	}
	return NewSigner(keys...)
}

// PublicKeys returns the keys that verify its tokens, the signing key
// first: what the gateway puts in a workflow's input.
func (s *Signer) PublicKeys() []operation.ResolutionKey {
	out := make([]operation.ResolutionKey, len(s.public))
	for i, k := range s.public {
		out[i] = operation.ResolutionKey{ID: k.ID, PublicKey: bytes.Clone(k.PublicKey)}
	}
	return out
}

// Issue returns the token of operator's decision res about opID, valid
// for TTL from now, and its statement.
func (s *Signer) Issue(opID, operator string, res operation.Resolution, now time.Time) (string, Statement, error) {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", Statement{}, fmt.Errorf("resolution token id: %w", err)
	}
	resultHash, err := resultSHA256(res.Result)
	if err != nil {
		return "", Statement{}, err
	}
	now = now.UTC().Truncate(time.Second)
	st := Statement{ID: hex.EncodeToString(id[:]), OperationID: opID, Outcome: res.Outcome,
		ResultSHA256: resultHash, Reason: res.Reason, Note: res.Note, EvidenceURL: res.EvidenceURL,
		Operator: operator, IssuedAt: now, ExpiresAt: now.Add(TTL)}
	payload, err := json.Marshal(st)
	if err != nil {
		return "", Statement{}, fmt.Errorf("encode resolution statement: %w", err)
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	sigs := make([]string, len(s.keys))
	for i, key := range s.keys {
		sigs[i] = s.public[i].ID + ":" + base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, []byte(signingPrefix+p)))
	}
	return p + "." + strings.Join(sigs, ","), st, nil
}

// Verify returns the statement of res's token if one of keys signed it,
// it is valid at now, and it states exactly res's decision about opID;
// otherwise an error wrapping the reason (ErrMissing, ErrMalformed,
// ErrUnknownKey, ErrForged, ErrExpired, ErrOtherOperation,
// ErrOtherDecision). It is pure: the workflow calls it with
// workflow.Now.
func Verify(keys []operation.ResolutionKey, opID string, res operation.Resolution, now time.Time) (Statement, error) {
	if res.Token == "" {
		return Statement{}, ErrMissing
	}
	p, sigs, ok := strings.Cut(res.Token, ".")
	if !ok {
		return Statement{}, fmt.Errorf("%w: not payload.signatures", ErrMalformed)
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return Statement{}, fmt.Errorf("%w: payload: %v", ErrMalformed, err)
	}
	var st Statement
	if err := json.Unmarshal(payload, &st); err != nil {
		return Statement{}, fmt.Errorf("%w: statement: %v", ErrMalformed, err)
	}
	if err := verifySignatures(keys, p, sigs); err != nil {
		return Statement{}, err
	}
	if now.Add(ClockSkew).Before(st.IssuedAt) || !now.Before(st.ExpiresAt) {
		return Statement{}, fmt.Errorf("%w: valid from %s to %s, now %s", ErrExpired, st.IssuedAt.Format(time.RFC3339),
			st.ExpiresAt.Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	if st.OperationID != opID {
		return Statement{}, fmt.Errorf("%w: %s", ErrOtherOperation, st.OperationID)
	}
	if st.Outcome != res.Outcome {
		return Statement{}, fmt.Errorf("%w: outcome %s, the decision says %s", ErrOtherDecision, st.Outcome, res.Outcome)
	}
	resultHash, err := resultSHA256(res.Result)
	if err != nil {
		return Statement{}, fmt.Errorf("%w: %v", ErrOtherDecision, err)
	}
	if st.ResultSHA256 != resultHash || st.Reason != res.Reason || st.Note != res.Note || st.EvidenceURL != res.EvidenceURL {
		return Statement{}, fmt.Errorf("%w: its result, reason, note or evidence_url differ", ErrOtherDecision)
	}
	if st.Operator == "" {
		return Statement{}, fmt.Errorf("%w: no operator", ErrMalformed)
	}
	return st, nil
}

// verifySignatures says whether one of sigs (kid:base64url, comma
// separated) by a listed key verifies payload.
func verifySignatures(keys []operation.ResolutionKey, payload, sigs string) error {
	known := false
	for sigText := range strings.SplitSeq(sigs, ",") {
		kid, b64, ok := strings.Cut(sigText, ":")
		if !ok {
			return fmt.Errorf("%w: signature %q is not kid:signature", ErrMalformed, sigText)
		}
		key, ok := keyOf(keys, kid)
		if !ok {
			continue
		}
		known = true
		sig, err := base64.RawURLEncoding.DecodeString(b64)
		if err == nil && len(key) == ed25519.PublicKeySize && ed25519.Verify(key, []byte(signingPrefix+payload), sig) {
			return nil
		}
	}
	if !known {
		return ErrUnknownKey
	}
	return ErrForged
}

// keyOf finds the key named id.
func keyOf(keys []operation.ResolutionKey, id string) (ed25519.PublicKey, bool) {
	for _, k := range keys {
		if k.ID == id {
			return k.PublicKey, true
		}
	}
	return nil, false
}

// resultSHA256 is the hex SHA-256 of the compacted result (a payload
// converter's round trip may change its spacing), "" for none.
func resultSHA256(result json.RawMessage) (string, error) {
	if len(result) == 0 || string(result) == "null" {
		return "", nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, result); err != nil {
		return "", fmt.Errorf("result is not JSON: %w", err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:]), nil
}
