// Package ceremony runs the WebAuthn ceremonies of approvals with
// github.com/go-webauthn/webauthn: enrolling a passkey for a subject, and
// verifying an assertion over an approval.Statement against the subject's
// passkeys (signature, origin, RP ID, user presence and verification, sign
// counter). The challenge of an approval is not random: it is the
// statement's SHA-256, so an assertion is bound to one decision about one
// operation and its exact params, and no server-side session is kept
// between showing the page and verifying.
package ceremony

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/oncegate/oncegate/approval"
)

// Config is the relying party: its ID (a domain, never an IP address:
// WebAuthn refuses those), its name shown by the authenticator, and the
// origins the pages are served from.
type Config struct {
	// RPID is the relying party's ID, such as localhost or pay.example.com.
	RPID string
	// RPDisplayName is shown by the authenticator (default "oncegate").
	RPDisplayName string
	// Origins are the page origins allowed, such as http://localhost:8080.
	Origins []string
	// Timeout is how long the browser waits for the authenticator (default 2m).
	Timeout time.Duration
}

// ErrConfig is wrapped by New's error for a relying party WebAuthn refuses.
var ErrConfig = errors.New("webauthn relying party")

// ErrRefused is wrapped by every ceremony the gateway refuses: a response
// that does not parse or does not verify.
var ErrRefused = errors.New("webauthn ceremony refused")

// Ceremony runs enrolments and approvals for one relying party.
type Ceremony struct {
	w *webauthn.WebAuthn
}

// New checks cfg and returns the ceremony runner.
func New(cfg Config) (*Ceremony, error) {
	if err := CheckConfig(cfg.RPID, cfg.Origins); err != nil {
		return nil, err
	}
	if cfg.RPDisplayName == "" {
		cfg.RPDisplayName = "oncegate"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Minute
	}
	timeouts := webauthn.TimeoutConfig{Enforce: false, Timeout: cfg.Timeout, TimeoutUVD: cfg.Timeout}
	w, err := webauthn.New(&webauthn.Config{
		RPID: cfg.RPID, RPDisplayName: cfg.RPDisplayName, RPOrigins: cfg.Origins,
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:      protocol.ResidentKeyRequirementRequired,
			UserVerification: protocol.VerificationRequired,
		},
		Timeouts: webauthn.TimeoutsConfig{Login: timeouts, Registration: timeouts},
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return &Ceremony{w: w}, nil
}

// CheckConfig refuses an RP ID that is empty or an IP address, and an
// origin that is not http(s)://host[:port] on the RP ID or a subdomain of it.
func CheckConfig(rpID string, origins []string) error {
	if rpID == "" {
		return fmt.Errorf("%w: the RP ID is empty", ErrConfig)
	}
	if net.ParseIP(rpID) != nil {
		return fmt.Errorf("%w: the RP ID %s is an IP address, which WebAuthn refuses: use a domain (localhost in the dev stack)", ErrConfig, rpID)
	}
	if len(origins) == 0 {
		return fmt.Errorf("%w: no origin", ErrConfig)
	}
	for _, o := range origins {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			return fmt.Errorf("%w: origin %q is not http(s)://host[:port]", ErrConfig, o)
		}
		h := u.Hostname()
		if h != rpID && !bytes.HasSuffix([]byte(h), []byte("."+rpID)) {
			return fmt.Errorf("%w: origin %s is not on the RP ID %s or a subdomain of it", ErrConfig, o, rpID)
		}
	}
	return nil
}

// UserHandle is the WebAuthn user handle of subject: the SHA-256 of
// "oncegate-subject:" + subject. It names the account to the authenticator
// without the subject's name.
func UserHandle(subject string) []byte {
	sum := sha256.Sum256([]byte("oncegate-subject:" + subject))
	return sum[:]
}

// user is a subject and its passkeys as go-webauthn sees them.
type user struct {
	subject string
	creds   []webauthn.Credential
}

func (u user) WebAuthnID() []byte                         { return UserHandle(u.subject) }
func (u user) WebAuthnName() string                       { return u.subject }
func (u user) WebAuthnDisplayName() string                { return u.subject }
func (u user) WebAuthnCredentials() []webauthn.Credential { return u.creds }

// userOf decodes the stored credentials of keys.
func userOf(subject string, keys []approval.Passkey) (user, error) {
	u := user{subject: subject}
	for _, k := range keys {
		var c webauthn.Credential
		if err := json.Unmarshal(k.Credential, &c); err != nil {
			return user{}, fmt.Errorf("passkey %s: decode credential: %w", k.ID, err)
		}
		c.Authenticator.SignCount = k.SignCount
		u.creds = append(u.creds, c)
	}
	return u, nil
}

// BeginEnrolment returns the options for navigator.credentials.create (a
// discoverable passkey with user verification, none of keys again) and the
// session to keep until FinishEnrolment.
func (c *Ceremony) BeginEnrolment(subject string, keys []approval.Passkey) (options, session json.RawMessage, err error) {
	u, err := userOf(subject, keys)
	if err != nil {
		return nil, nil, err
	}
	exclude := make([]protocol.CredentialDescriptor, 0, len(u.creds))
	for i := range u.creds {
		exclude = append(exclude, u.creds[i].Descriptor())
	}
	creation, sd, err := c.w.BeginRegistration(u, webauthn.WithExclusions(exclude),
		webauthn.WithConveyancePreference(protocol.PreferNoAttestation))
	if err != nil {
		return nil, nil, fmt.Errorf("begin enrolment: %w", err)
	}
	if options, err = json.Marshal(creation); err != nil {
		return nil, nil, fmt.Errorf("begin enrolment: %w", err)
	}
	if session, err = json.Marshal(sd); err != nil {
		return nil, nil, fmt.Errorf("begin enrolment: %w", err)
	}
	return options, session, nil
}

// FinishEnrolment verifies the browser's registration response against the
// session BeginEnrolment kept and returns the new passkey of subject.
func (c *Ceremony) FinishEnrolment(subject string, session, response []byte) (approval.Passkey, error) {
	var sd webauthn.SessionData
	if err := json.Unmarshal(session, &sd); err != nil || sd.Challenge == "" {
		return approval.Passkey{}, fmt.Errorf("%w: no enrolment was begun with this link", ErrRefused)
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
	if err != nil {
		return approval.Passkey{}, fmt.Errorf("%w: %s", ErrRefused, describe(err))
	}
	cred, err := c.w.CreateCredential(user{subject: subject}, sd, parsed)
	if err != nil {
		return approval.Passkey{}, fmt.Errorf("%w: %s", ErrRefused, describe(err))
	}
	raw, err := json.Marshal(cred)
	if err != nil {
		return approval.Passkey{}, fmt.Errorf("encode credential: %w", err)
	}
	return approval.Passkey{
		ID: base64.RawURLEncoding.EncodeToString(cred.ID), Subject: subject,
		Credential: raw, SignCount: cred.Authenticator.SignCount,
	}, nil
}

// AssertionOptions returns the options for navigator.credentials.get that
// sign st with one of keys (the passkeys that may decide it: the
// subject's, or the approvers' of several people): the challenge is
// st.Challenge(), user verification is required.
func (c *Ceremony) AssertionOptions(st approval.Statement, keys []approval.Passkey) (json.RawMessage, error) {
	assertion, _, _, err := c.beginLogin(st, st.Subject, keys)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(assertion)
	if err != nil {
		return nil, fmt.Errorf("assertion options: %w", err)
	}
	return out, nil
}

// beginLogin begins an assertion over st by person's account holding keys
// (the options list every key; only the challenge and the keys matter to
// the browser).
func (c *Ceremony) beginLogin(st approval.Statement, person string, keys []approval.Passkey) (*protocol.CredentialAssertion, *webauthn.SessionData, user, error) {
	u, err := userOf(person, keys)
	if err != nil {
		return nil, nil, user{}, err
	}
	if len(u.creds) == 0 {
		return nil, nil, user{}, fmt.Errorf("%w: %s has no passkey", ErrRefused, st.Subject)
	}
	assertion, sd, err := c.w.BeginLogin(u, webauthn.WithChallenge(st.Challenge()),
		webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		return nil, nil, user{}, fmt.Errorf("assertion options: %w", err)
	}
	return assertion, sd, u, nil
}

// signer finds the person of the passkey that answered (its credential id
// among keys) and that person's keys: an assertion is verified against its
// own person's account, whose user handle the authenticator returns.
func signer(parsed *protocol.ParsedCredentialAssertionData, keys []approval.Passkey) (string, []approval.Passkey, error) {
	id := base64.RawURLEncoding.EncodeToString(parsed.RawID)
	person := ""
	for _, k := range keys {
		if k.ID == id {
			person = k.Subject
			break
		}
	}
	if person == "" {
		return "", nil, fmt.Errorf("%w: the passkey that answered is not one that may decide this operation", ErrRefused)
	}
	var theirs []approval.Passkey
	for _, k := range keys {
		if k.Subject == person {
			theirs = append(theirs, k)
		}
	}
	return person, theirs, nil
}

// Evidence is what is kept of a verified assertion: the statement it signed
// and the authenticator's exact bytes, from which anyone holding the
// passkey's public key can check the signature again.
type Evidence struct {
	// Statement is the canonical statement (its SHA-256 is the challenge).
	Statement json.RawMessage `json:"statement"`
	// CredentialID is the passkey's id (base64url).
	CredentialID string `json:"credential_id"`
	// ClientDataJSON is the browser's client data, base64url.
	ClientDataJSON string `json:"client_data_json"`
	// AuthenticatorData is the authenticator's data, base64url.
	AuthenticatorData string `json:"authenticator_data"`
	// Signature is the assertion's signature, base64url.
	Signature string `json:"signature"`
	// UserHandle is the user handle returned, base64url (may be empty).
	UserHandle string `json:"user_handle,omitempty"`
}

// Verified is an assertion that verified.
type Verified struct {
	// CredentialID is the passkey that signed (base64url).
	CredentialID string
	// Person is whose passkey it is (the subject it was enrolled for): the
	// approver who decided.
	Person string
	// SignCount is its new signature counter.
	SignCount uint32
	// Evidence is the Evidence as stored (JSON).
	Evidence json.RawMessage
	// EvidenceSHA256 is the hex SHA-256 of Evidence.
	EvidenceSHA256 string
}

// Verify checks the browser's assertion response: it must sign st (the
// challenge), come from one of keys (the passkeys that may decide it), on
// its person's account (the user handle), from an allowed origin for this
// RP ID, with user presence and verification, and a counter that advanced.
// It returns the evidence and whose passkey signed.
func (c *Ceremony) Verify(st approval.Statement, keys []approval.Passkey, response []byte) (Verified, error) {
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return Verified{}, fmt.Errorf("%w: %s", ErrRefused, describe(err))
	}
	person, theirs, err := signer(parsed, keys)
	if err != nil {
		return Verified{}, err
	}
	_, sd, u, err := c.beginLogin(st, person, theirs)
	if err != nil {
		return Verified{}, err
	}
	cred, err := c.w.ValidateLogin(u, *sd, parsed)
	if err != nil {
		return Verified{}, fmt.Errorf("%w: %s", ErrRefused, describe(err))
	}
	if cred.Authenticator.CloneWarning {
		return Verified{}, fmt.Errorf("%w: %w", ErrRefused, approval.ErrSignCount)
	}
	raw := parsed.Raw.AssertionResponse
	enc := base64.RawURLEncoding
	ev := Evidence{
		Statement:         st.Canonical(),
		CredentialID:      enc.EncodeToString(cred.ID),
		ClientDataJSON:    enc.EncodeToString(raw.ClientDataJSON),
		AuthenticatorData: enc.EncodeToString(raw.AuthenticatorData),
		Signature:         enc.EncodeToString(raw.Signature),
		UserHandle:        enc.EncodeToString(raw.UserHandle),
	}
	evidence, err := json.Marshal(ev)
	if err != nil {
		return Verified{}, fmt.Errorf("encode evidence: %w", err)
	}
	sum := sha256.Sum256(evidence)
	return Verified{
		CredentialID: ev.CredentialID, Person: person, SignCount: cred.Authenticator.SignCount,
		Evidence: evidence, EvidenceSHA256: hex.EncodeToString(sum[:]),
	}, nil
}

// describe is the text of a go-webauthn error, with its details.
func describe(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) && pe.Details != "" {
		return pe.Details
	}
	return err.Error()
}
