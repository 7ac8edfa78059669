package client_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/oncegate/oncegate/api"
	"github.com/oncegate/oncegate/client"
)

// opsOnly are the gateway's statuses the client's calls never answer (ops,
// health, the downstreams' webhooks, the tool definitions): the client does
// not mirror them.
var opsOnly = map[api.Status]bool{
	api.StatusNotAwaitingReview: true, api.StatusInvalidResolution: true, api.StatusResolutionSent: true,
	api.StatusOperationsListed: true, api.StatusOperationFound: true, api.StatusResolved: true, api.StatusAlreadyResolved: true,
	api.StatusAlive: true, api.StatusReady: true, api.StatusNotReady: true,
	api.StatusWebhookAccepted: true, api.StatusWebhookRefused: true, api.StatusInvalidRequest: true,
	// The approval page's and the passkey operators' answers.
	api.StatusWebAuthnOptions: true, api.StatusApprovalRecorded: true, api.StatusPasskeyEnrolled: true,
	api.StatusCeremonyRefused: true, api.StatusPasskeyInvited: true, api.StatusPasskeysListed: true,
	api.StatusPasskeyRevoked: true, api.StatusApprovalsListed: true, api.StatusUnknownPasskey: true,
}

func TestReplayHeaderIsTheGateways(t *testing.T) {
	t.Parallel()
	assert.Equal(t, api.HeaderReplayed, client.HeaderReplayed)
}

// TestStatusesMirrorTheGateway keeps the client's status table and the
// gateway's registry in step: every agent-facing status of the gateway is
// known to the client with the same HTTP code.
func TestStatusesMirrorTheGateway(t *testing.T) {
	t.Parallel()
	mine := client.Statuses()
	for name, info := range api.Statuses {
		if opsOnly[name] {
			continue
		}
		code, ok := mine[client.Status(name)]
		if assert.Truef(t, ok, "gateway status %q is missing from the client", name) {
			assert.Equalf(t, info.Code, code, "HTTP code of %q", name)
		}
	}
	for name := range mine {
		_, ok := api.Statuses[api.Status(name)]
		assert.Truef(t, ok, "client status %q is not the gateway's", name)
	}
}
