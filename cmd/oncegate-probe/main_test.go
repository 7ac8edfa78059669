package main

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestProbe(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	assert.NoError(t, probe(srv.URL+"/healthz"))
	assert.ErrorContains(t, probe(srv.URL+"/readyz"), "HTTP 503")
	assert.Error(t, probe("http://127.0.0.1:1/healthz"))
}
