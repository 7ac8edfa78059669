package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestWebhookAlertPostsJSON(t *testing.T) {
	t.Parallel()
	var got SecurityEvent
	var url string
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		url = r.URL.String()
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		require.NoError(t, json.NewDecoder(r.Body).Decode(&got))
		return &http.Response{StatusCode: 204, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
	})}
	NewWebhookAlert("http://alerts.example/hook", client, nil).Alert(context.Background(),
		SecurityEvent{Kind: EventParamMismatch, Subject: "alice", Scope: "payments.transfer", OperationID: "op"})
	assert.Equal(t, "http://alerts.example/hook", url)
	assert.Equal(t, EventParamMismatch, got.Kind)
	assert.Equal(t, "alice", got.Subject)
}
