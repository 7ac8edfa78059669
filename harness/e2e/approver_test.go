package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/harness/softauthn"
)

// approver is a person with passkeys, in tests without a browser: it
// enrols through an operator's invite link and decides through the
// approval page's endpoints with a software authenticator whose origin is
// the gateway's public URL.
type approver struct {
	// base is where the test reaches the gateway (the links name its public URL).
	base  string
	auth  *softauthn.Authenticator
	creds map[string]*softauthn.Credential
}

func newApprover(base, publicURL string) *approver {
	return &approver{base: strings.TrimRight(base, "/"), auth: softauthn.New(publicURL), creds: map[string]*softauthn.Credential{}}
}

// local rewrites a link of the gateway's public URL to the address the test reaches.
func (a *approver) local(t testing.TB, link string) string {
	t.Helper()
	u, err := url.Parse(link)
	require.NoError(t, err)
	return a.base + u.RequestURI()
}

// enrol registers a passkey for subject, with roles, through an invite
// made with the operator's token.
func (a *approver) enrol(t testing.TB, subject string, roles ...string) *softauthn.Credential {
	t.Helper()
	body := map[string]any{"subject": subject}
	if len(roles) > 0 {
		body["roles"] = roles
	}
	inv := call(t, http.MethodPost, a.base+"/v1/ops/passkeys/invites", "dev-ops", body)
	require.Equal(t, "passkey_invited", inv.str("status"), inv.String())
	link := a.local(t, inv.str("url"))
	opts := call(t, http.MethodPost, link+"/options", "", map[string]any{})
	require.Equal(t, "webauthn_options", opts.str("status"), opts.String())
	raw, err := json.Marshal(opts.Body["options"])
	require.NoError(t, err)
	cred, resp, err := a.auth.Register(raw)
	require.NoError(t, err)
	done := call(t, http.MethodPost, link+"/finish", "", map[string]any{"credential": json.RawMessage(resp)})
	require.Equal(t, "passkey_enrolled", done.str("status"), done.String())
	a.creds[subject] = cred
	return cred
}

// decisionBody is what the page posts: the link's f and p and the decision.
func decisionBody(t testing.TB, approvalURL, decision string) (path string, body map[string]any) {
	t.Helper()
	u, err := url.Parse(approvalURL)
	require.NoError(t, err)
	return u.Path, map[string]any{"f": u.Query().Get("f"), "p": u.Query().Get("p"), "decision": decision}
}

// decide approves or declines the operation of approvalURL as the page
// does: options, then an assertion by the subject's passkey. It returns
// the decision's answer and the credential it posted.
func (a *approver) decide(t testing.TB, approvalURL, decision string) (answer, json.RawMessage) {
	t.Helper()
	path, body := decisionBody(t, approvalURL, decision)
	opts := call(t, http.MethodPost, a.base+path+"/options", "", body)
	require.Equal(t, "webauthn_options", opts.str("status"), opts.String())
	raw, err := json.Marshal(opts.Body["options"])
	require.NoError(t, err)
	resp, err := a.auth.Assert(raw)
	require.NoError(t, err)
	body["credential"] = json.RawMessage(resp)
	return call(t, http.MethodPost, a.base+path+"/decision", "", body), resp
}

// forge posts a decision for approvalURL signed by cred over challenge
// (base64url) whatever the page's options say: what an attacker holding
// cred could send.
func (a *approver) forge(t testing.TB, approvalURL, decision string, cred *softauthn.Credential, challenge []byte) answer {
	t.Helper()
	path, body := decisionBody(t, approvalURL, decision)
	resp, err := a.auth.Sign(cred, base64.RawURLEncoding.EncodeToString(challenge))
	require.NoError(t, err)
	body["credential"] = json.RawMessage(resp)
	return call(t, http.MethodPost, a.base+path+"/decision", "", body)
}

// post sends a decision body with a given credential as it is.
func (a *approver) post(t testing.TB, approvalURL, decision string, credential json.RawMessage, token string) answer {
	t.Helper()
	path, body := decisionBody(t, approvalURL, decision)
	if credential != nil {
		body["credential"] = credential
	}
	return call(t, http.MethodPost, a.base+path+"/decision", token, body)
}
