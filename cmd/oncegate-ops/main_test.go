package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorded is one request the fake gateway received.
type recorded struct {
	method, path, query, auth, contentType string
	body                                   []byte
}

// gateway starts a fake ops API answering status and body, and returns the
// environment pointing at it and the requests it received.
func gateway(t *testing.T, status int, body string) (map[string]string, *[]recorded) {
	t.Helper()
	reqs := &[]recorded{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*reqs = append(*reqs, recorded{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), b})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{"GATEWAY_URL": srv.URL, "ONCEGATE_OPS_TOKEN": "tok-ops"}
	return env, reqs
}

// runCLI runs the CLI and returns its exit status, stdout and stderr.
func runCLI(environ map[string]string, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, environ, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestList(t *testing.T) {
	getenv, reqs := gateway(t, http.StatusOK, `{"operations":[
		{"operation_id":"op1","state":"NEEDS_REVIEW","scope":"payments.legacy_transfer","subject":"alice","updated_at":"2026-01-02T03:04:05Z","reason":"status endpoint down"}]}`)

	code, out, errOut := runCLI(getenv, "list", "--state", "needs_manual_review")

	require.Equal(t, 0, code, errOut)
	require.Len(t, *reqs, 1)
	r := (*reqs)[0]
	assert.Equal(t, http.MethodGet, r.method)
	assert.Equal(t, "/v1/ops/operations", r.path)
	assert.Equal(t, "state=needs_manual_review", r.query)
	assert.Equal(t, "Bearer tok-ops", r.auth)
	assert.Contains(t, out, "OPERATION_ID")
	assert.Contains(t, out, "op1")
	assert.Contains(t, out, "NEEDS_REVIEW")
	assert.Contains(t, out, "payments.legacy_transfer")
	assert.Contains(t, out, "alice")
	assert.Contains(t, out, "2026-01-02T03:04:05Z")
	assert.Contains(t, out, "status endpoint down")
}

func TestListBareArrayWithoutState(t *testing.T) {
	getenv, reqs := gateway(t, http.StatusOK, `[{"operation_id":"op2","state":"IN_FLIGHT"}]`)

	code, out, _ := runCLI(getenv, "list")

	require.Equal(t, 0, code)
	assert.Empty(t, (*reqs)[0].query)
	assert.Contains(t, out, "op2")
}

func TestShow(t *testing.T) {
	answer := `{"status":"operation_found","operation":{"operation_id":"op1","scope":"payments.transfer","state":"DONE","acting_client":"alice-app",` +
		`"resolved_by":"ops","resolution_note":"seen in the ledger","mandate_id":"m-41","mandate_sha256":"5a1b"},` +
		`"params":{"amount":"12.5","currency":"USD","payee_id":"p-1"},` +
		`"timeline":[{"at":"2026-01-01T00:00:00Z","source":"truth","event":"claimed","detail":"claimed IN_FLIGHT"}]}`
	getenv, reqs := gateway(t, http.StatusOK, answer)

	code, out, _ := runCLI(getenv, "show", "op1")

	require.Equal(t, 0, code)
	assert.Equal(t, "/v1/ops/operations/op1", (*reqs)[0].path)
	assert.Equal(t, "Bearer tok-ops", (*reqs)[0].auth)
	for _, want := range []string{"payments.transfer", "amount", "12.5", "USD", "p-1", "decided_by", "ops", "claimed IN_FLIGHT",
		"mandate             m-41", "statement_sha256  5a1b"} {
		assert.Contains(t, out, want)
	}
	assert.Regexp(t, `(?m)^acting_client\s+alice-app$`, out, "who acted for the subject")

	code, out, _ = runCLI(getenv, "show", "op1", "--json")
	require.Equal(t, 0, code)
	assert.JSONEq(t, answer, out)
}

func TestListOlderThan(t *testing.T) {
	getenv, reqs := gateway(t, http.StatusOK, `{"operations":[]}`)

	code, _, errOut := runCLI(getenv, "list", "--state", "in_flight", "--older-than", "10m", "--json")

	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "older_than=10m0s&state=in_flight", (*reqs)[0].query)
}

func TestResolveRefusedExitsNonZero(t *testing.T) {
	getenv, _ := gateway(t, http.StatusConflict, `{"status":"already_resolved","meaning":"Operation op1 was already decided by bob as failed."}`)

	code, _, errOut := runCLI(getenv, "resolve", "op1", "--outcome", "failed", "--reason", "x", "--note", "n")

	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "already_resolved")
	assert.Contains(t, errOut, "by bob as failed")
}

func TestResolve(t *testing.T) {
	getenv, reqs := gateway(t, http.StatusOK, `{"status":"resolved","operation_id":"op1","state":"DONE","result_ref":"lt_1",`+
		`"decision":{"operator":"ops","outcome":"completed","decided_at":"2026-01-02T03:04:05Z","via":"update"},"meaning":"Done."}`)

	code, out, errOut := runCLI(getenv, "resolve", "op1", "--outcome", "completed", "--result", `{"id":"lt_1"}`, "--note", "seen in the ledger")

	require.Equal(t, 0, code, errOut)
	require.Len(t, *reqs, 1)
	r := (*reqs)[0]
	assert.Equal(t, http.MethodPost, r.method)
	assert.Equal(t, "/v1/ops/operations/op1/resolve", r.path)
	assert.Equal(t, "Bearer tok-ops", r.auth)
	assert.Equal(t, "application/json", r.contentType)
	var body map[string]any
	require.NoError(t, json.Unmarshal(r.body, &body))
	assert.Equal(t, map[string]any{"outcome": "completed", "result": map[string]any{"id": "lt_1"}, "note": "seen in the ledger"}, body)
	for _, want := range []string{"resolved", "op1", "DONE", "lt_1", "decided_by", "ops", "2026-01-02T03:04:05Z", "via"} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "{", "JSON only with --json")

	code, out, errOut = runCLI(getenv, "resolve", "op1", "--outcome", "completed", "--result", `{"id":"lt_1"}`, "--note", "n", "--json")
	require.Equal(t, 0, code, errOut)
	var printed map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &printed), "--json prints the answer: %s", out)
	assert.Equal(t, "resolved", printed["status"])
}

func TestResolveFailedFlagsFirst(t *testing.T) {
	getenv, reqs := gateway(t, http.StatusOK, `{}`)

	code, _, errOut := runCLI(getenv, "resolve", "--outcome", "failed", "--reason", "never sent", "--note", "bank says no", "op9")

	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "/v1/ops/operations/op9/resolve", (*reqs)[0].path)
	assert.JSONEq(t, `{"outcome":"failed","reason":"never sent","note":"bank says no"}`, string((*reqs)[0].body))
}

func TestServerRefusalExitsOne(t *testing.T) {
	getenv, _ := gateway(t, http.StatusConflict, `{"status":"not_awaiting_review","message":"operation op1 is DONE"}`)

	code, out, errOut := runCLI(getenv, "resolve", "op1", "--outcome", "failed", "--reason", "x", "--note", "y")

	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "HTTP 409")
	assert.Contains(t, errOut, "operation op1 is DONE")
}

func TestUsageErrorsSendNothing(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"no command", nil},
		{"unknown command", []string{"frobnicate"}},
		{"show without id", []string{"show"}},
		{"resolve bad outcome", []string{"resolve", "op1", "--outcome", "maybe", "--note", "n"}},
		{"resolve without note", []string{"resolve", "op1", "--outcome", "completed"}},
		{"resolve failed without reason", []string{"resolve", "op1", "--outcome", "failed", "--note", "n"}},
		{"resolve bad result", []string{"resolve", "op1", "--outcome", "completed", "--result", "{", "--note", "n"}},
		{"unknown flag", []string{"list", "--bogus"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv, reqs := gateway(t, http.StatusOK, `{}`)

			code, _, errOut := runCLI(getenv, tt.args...)

			assert.Equal(t, 2, code)
			assert.Contains(t, errOut, "usage")
			assert.Empty(t, *reqs)
		})
	}
}

func TestRefusalPrintsErrorsOrTheAnswer(t *testing.T) {
	tests := []struct {
		name, answer string
		args         []string
		wants        []string
	}{
		{
			name: "list filter",
			answer: `{"status":"invalid_resolution","meaning":"The list filter is not valid; every problem is listed in errors.",` +
				`"retryable":false,"errors":[{"field":"state","rule":"enum","problem":"must be one of in_flight, needs_manual_review, completed, failed"}]}`,
			args:  []string{"list", "--state", "bogus"},
			wants: []string{"The list filter is not valid", "\n  - state: must be one of in_flight, needs_manual_review, completed, failed"},
		},
		{
			name: "resolve evidence",
			answer: `{"status":"invalid_resolution","meaning":"The resolution is incomplete or inconsistent; every problem is listed in errors.",` +
				`"errors":[{"field":"evidence_url","problem":"must be an absolute http or https URL"},{"problem":"whole body","expected":"an object"}]}`,
			args: []string{"resolve", "op1", "--outcome", "failed", "--reason", "x", "--note", "y", "--evidence-url", "notaurl"},
			wants: []string{"The resolution is incomplete", "\n  - evidence_url: must be an absolute http or https URL",
				"\n  - whole body (expected an object)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv, _ := gateway(t, http.StatusBadRequest, tt.answer)

			code, out, errOut := runCLI(getenv, tt.args...)
			assert.Equal(t, exitError, code)
			assert.Empty(t, out, "without --json nothing on stdout")
			for _, want := range tt.wants {
				assert.Contains(t, errOut, want)
			}

			code, out, errOut = runCLI(getenv, append(tt.args, "--json")...)
			assert.Equal(t, exitError, code, "a refusal exits 1 with --json too")
			assert.JSONEq(t, tt.answer, out, "--json prints the gateway's answer as it is")
			assert.Contains(t, errOut, "HTTP 400")
		})
	}
}

func TestLimitsResetPrintsForAPerson(t *testing.T) {
	answer := `{"status":"limits_reset","meaning":"The budget windows of subject bob start afresh now.",` +
		`"reset":{"subject":"bob","reset_at":"2026-01-02T03:04:05Z","reset_by":"ops","trace_id":"4bf92f3577b34da6"}}`
	getenv, reqs := gateway(t, http.StatusOK, answer)

	code, out, errOut := runCLI(getenv, "limits", "reset", "--subject", "bob")

	require.Equal(t, exitOK, code, errOut)
	require.Len(t, *reqs, 1)
	assert.Equal(t, http.MethodPost, (*reqs)[0].method)
	assert.Equal(t, "/v1/ops/limits/bob/reset", (*reqs)[0].path)
	for _, want := range []string{"limits_reset", "bob", "2026-01-02T03:04:05Z", "reset_by", "ops", "4bf92f3577b34da6", "start afresh"} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "{", "JSON only with --json")

	code, out, errOut = runCLI(getenv, "limits", "reset", "--subject", "bob", "--json")
	require.Equal(t, exitOK, code, errOut)
	assert.JSONEq(t, answer, out)
}

func TestLimitsShowBudgetWithoutCurrency(t *testing.T) {
	answer := `{"status":"limits_shown","limits":{"subject":"bob","role":"agent","budgets":[` +
		`{"name":"bob-daily-chf","window":"daily","currency":"CHF","max":"1000.00","used":"0.00","left":"1000.00"},` +
		`{"name":"bob-per-operation","window":"per_operation","currency":"","max":"500.00","used":"0","left":"500.00"}]}}`
	getenv, reqs := gateway(t, http.StatusOK, answer)

	code, out, errOut := runCLI(getenv, "limits", "show", "--subject", "bob")

	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "/v1/ops/limits/bob", (*reqs)[0].path)
	lines := strings.Split(out, "\n")
	require.GreaterOrEqual(t, len(lines), 3, out)
	assert.Contains(t, lines[1], "CHF")
	assert.Contains(t, lines[2], "bob-per-operation")
	assert.Contains(t, lines[2], "any currency")
	assert.Contains(t, lines[2], "500.00")
}

func TestHelpPrintsUsageOnceAndExitsZero(t *testing.T) {
	for _, args := range [][]string{{"list", "--help"}, {"list", "-h"}, {"resolve", "op1", "--help"}, {"limits", "show", "-help"}} {
		getenv, reqs := gateway(t, http.StatusOK, `{}`)

		code, out, errOut := runCLI(getenv, args...)

		assert.Equal(t, exitOK, code, args)
		assert.Equal(t, usage, out, args)
		assert.Empty(t, errOut, args)
		assert.Empty(t, *reqs, args)
	}
}

func TestBadFlagPrintsOneErrorAndOneUsage(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		error string
	}{
		{"bad duration", []string{"list", "--older-than", "abc"}, `invalid value "abc" for flag -older-than`},
		{"negative duration", []string{"list", "--older-than", "-5m"}, "--older-than must not be negative"},
		{"unknown flag", []string{"list", "--bogus"}, "flag provided but not defined: -bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv, reqs := gateway(t, http.StatusOK, `{}`)

			code, out, errOut := runCLI(getenv, tt.args...)

			assert.Equal(t, exitUsage, code)
			assert.Empty(t, out)
			assert.Empty(t, *reqs, "a usage error sends nothing")
			assert.Equal(t, 1, strings.Count(errOut, tt.error), errOut)
			assert.Equal(t, 1, strings.Count(errOut, "oncegate-ops: "), "one error line: %s", errOut)
			assert.Equal(t, 1, strings.Count(errOut, usage), "one usage: %s", errOut)
			assert.NotContains(t, errOut, "Usage of", "only the CLI's usage: %s", errOut)
		})
	}
}

// TestResolvePrintPayload: --print-payload asks the gateway for the
// resolve signal's input and decides nothing; the command line it prints,
// run by a shell, hands the temporal CLI that input byte for byte (a
// quote in the note included).
func TestResolvePrintPayload(t *testing.T) {
	input := `{"outcome":"failed","reason":"not in the ledger","operator":"ops","note":"the bank's 'no'","token":"cA.k1:c2ln"}`
	getenv, reqs := gateway(t, http.StatusOK, `{"status":"resolution_payload","operation_id":"op1","workflow_id":"op1",`+
		`"signal":"resolve","input":`+input+`,"expires_at":"2026-01-02T03:14:05Z","meaning":"Send it."}`)

	code, out, errOut := runCLI(getenv, "resolve", "op1", "--outcome", "failed", "--reason", "not in the ledger",
		"--note", "the bank's 'no'", "--print-payload")

	require.Equal(t, 0, code, errOut)
	require.Len(t, *reqs, 1)
	assert.Equal(t, "/v1/ops/operations/op1/resolution-payload", (*reqs)[0].path, "a payload, not a decision")
	for _, want := range []string{"workflow_id", "op1", "signal", "resolve", "2026-01-02T03:14:05Z", input} {
		assert.Contains(t, out, want)
	}
	var command string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "temporal workflow signal ") {
			command = l
		}
	}
	require.NotEmpty(t, command, out)

	// A temporal that prints its arguments, one a line.
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "temporal"), []byte("#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n"), 0o755))
	sh := exec.Command("sh", "-c", command)
	sh.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	got, err := sh.Output()
	require.NoError(t, err)
	assert.Equal(t, []string{"workflow", "signal", "--workflow-id", "op1", "--name", "resolve", "--input", input},
		strings.Split(strings.TrimSuffix(string(got), "\n"), "\n"))

	code, out, errOut = runCLI(getenv, "resolve", "op1", "--outcome", "failed", "--reason", "x", "--note", "n", "--print-payload", "--json")
	require.Equal(t, 0, code, errOut)
	var printed map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &printed), "--json prints the answer: %s", out)
	assert.Equal(t, "resolution_payload", printed["status"])
}
