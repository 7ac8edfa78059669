// Package softauthn is a software WebAuthn authenticator for tests: it
// answers the options a relying party hands navigator.credentials.create
// and .get with the JSON a browser would post back (attestation "none",
// ES256 keys, user presence and verification, a counter that advances), so
// the gateway's ceremonies can be tested without a browser, and assertions
// an attacker could make (another passkey over someone's challenge, a
// replay) can be forged on purpose. The browser test uses Chromium's own
// virtual authenticator instead.
package softauthn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
)

// Authenticator holds passkeys, one per credential id, for one origin.
type Authenticator struct {
	// Origin is the page origin the browser would report, such as http://localhost:8080.
	Origin string

	mu    sync.Mutex
	creds map[string]*Credential
}

// Credential is one passkey of the authenticator.
type Credential struct {
	// ID is the credential id.
	ID []byte
	// RPID is the relying party it is for.
	RPID string
	// UserHandle is the account's handle.
	UserHandle []byte
	// Counter is the signature counter of its last assertion.
	Counter uint32
	key     *ecdsa.PrivateKey
}

// IDString is the credential id, base64url without padding.
func (c *Credential) IDString() string { return base64.RawURLEncoding.EncodeToString(c.ID) }

// New returns an authenticator without passkeys for origin.
func New(origin string) *Authenticator {
	return &Authenticator{Origin: origin, creds: map[string]*Credential{}}
}

var b64 = base64.RawURLEncoding

// creationOptions is what Register reads of the creation options.
type creationOptions struct {
	PublicKey struct {
		Challenge string `json:"challenge"`
		RP        struct {
			ID string `json:"id"`
		} `json:"rp"`
		User struct {
			ID string `json:"id"`
		} `json:"user"`
	} `json:"publicKey"`
}

// Register creates a passkey for the creation options (JSON, as the
// relying party sends them) and returns it with the registration response
// JSON to post back.
func (a *Authenticator) Register(options []byte) (*Credential, []byte, error) {
	var o creationOptions
	if err := json.Unmarshal(options, &o); err != nil {
		return nil, nil, fmt.Errorf("softauthn: creation options: %w", err)
	}
	handle, err := b64.DecodeString(o.PublicKey.User.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("softauthn: user id: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	id := make([]byte, 32)
	_, _ = rand.Read(id)
	c := &Credential{ID: id, RPID: o.PublicKey.RP.ID, UserHandle: handle, key: key}
	clientData, err := json.Marshal(map[string]any{"type": "webauthn.create", "challenge": o.PublicKey.Challenge, "origin": a.Origin, "crossOrigin": false})
	if err != nil {
		return nil, nil, err
	}
	pub, err := coseKey(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	authData := rpHashFlags(c.RPID, 0x45, 0) // UP, UV, AT
	authData = append(authData, make([]byte, 16)...)
	authData = binary.BigEndian.AppendUint16(authData, uint16(len(id)))
	authData = append(authData, id...)
	authData = append(authData, pub...)
	att, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": authData})
	if err != nil {
		return nil, nil, err
	}
	resp, err := json.Marshal(map[string]any{
		"id": b64.EncodeToString(id), "rawId": b64.EncodeToString(id), "type": "public-key",
		"response": map[string]any{
			"clientDataJSON":    b64.EncodeToString(clientData),
			"attestationObject": b64.EncodeToString(att),
			"transports":        []string{"internal"},
		},
		"clientExtensionResults": map[string]any{},
	})
	if err != nil {
		return nil, nil, err
	}
	a.mu.Lock()
	a.creds[c.IDString()] = c
	a.mu.Unlock()
	return c, resp, nil
}

// assertionOptions is what Assert reads of the request options.
type assertionOptions struct {
	PublicKey struct {
		Challenge        string `json:"challenge"`
		RPID             string `json:"rpId"`
		AllowCredentials []struct {
			ID string `json:"id"`
		} `json:"allowCredentials"`
	} `json:"publicKey"`
}

// ErrNoCredential: none of the allowed credentials is held.
var ErrNoCredential = errors.New("softauthn: no allowed credential held")

// Assert answers assertion options (JSON) with the first allowed passkey it
// holds, as a browser would.
func (a *Authenticator) Assert(options []byte) ([]byte, error) {
	var o assertionOptions
	if err := json.Unmarshal(options, &o); err != nil {
		return nil, fmt.Errorf("softauthn: assertion options: %w", err)
	}
	a.mu.Lock()
	var c *Credential
	for _, allowed := range o.PublicKey.AllowCredentials {
		if c = a.creds[allowed.ID]; c != nil {
			break
		}
	}
	a.mu.Unlock()
	if c == nil {
		return nil, ErrNoCredential
	}
	return a.Sign(c, o.PublicKey.Challenge)
}

// Sign makes an assertion by c over challenge (base64url) whatever the
// relying party allowed: what a browser would refuse to do, and an attacker
// holding c could.
func (a *Authenticator) Sign(c *Credential, challenge string) ([]byte, error) {
	a.mu.Lock()
	c.Counter++
	counter := c.Counter
	a.mu.Unlock()
	clientData, err := json.Marshal(map[string]any{"type": "webauthn.get", "challenge": challenge, "origin": a.Origin, "crossOrigin": false})
	if err != nil {
		return nil, err
	}
	authData := rpHashFlags(c.RPID, 0x05, counter) // UP, UV
	cd := sha256.Sum256(clientData)
	digest := sha256.Sum256(append(append([]byte{}, authData...), cd[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, c.key, digest[:])
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"id": c.IDString(), "rawId": c.IDString(), "type": "public-key",
		"response": map[string]any{
			"clientDataJSON":    b64.EncodeToString(clientData),
			"authenticatorData": b64.EncodeToString(authData),
			"signature":         b64.EncodeToString(sig),
			"userHandle":        b64.EncodeToString(c.UserHandle),
		},
		"clientExtensionResults": map[string]any{},
	})
}

// rpHashFlags starts authenticator data: SHA-256 of the RP ID, the flags
// byte, the counter.
func rpHashFlags(rpID string, flags byte, counter uint32) []byte {
	h := sha256.Sum256([]byte(rpID))
	out := append(h[:], flags)
	return binary.BigEndian.AppendUint32(out, counter)
}

// coseKey encodes an ES256 public key as a COSE_Key.
func coseKey(pub *ecdsa.PublicKey) ([]byte, error) {
	raw, err := pub.Bytes() // 0x04 || X || Y
	if err != nil {
		return nil, err
	}
	return webauthncbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: raw[1:33], -3: raw[33:65]})
}
