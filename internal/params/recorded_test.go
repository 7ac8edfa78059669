package params

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecordedParamHashes: the params of every recorded workflow history
// (workflows/testdata/histories, written by real previews and confirms)
// bind today to the param_hash, and where recorded the canonical bytes,
// that the gateway computed then. A change to binding or canonical bytes
// that would stop issued fingerprints and stored operations from matching
// fails here.
func TestRecordedParamHashes(t *testing.T) {
	cat := devCatalog(t)
	files, err := filepath.Glob(filepath.Join("..", "..", "workflows", "testdata", "histories", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "recorded histories")
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			in := recordedInput(t, file)
			require.NotEmpty(t, in.ParamHash, "the recorded input has a param_hash")
			action, ok := cat.Lookup(in.Scope)
			require.True(t, ok, "scope %q is in the dev catalog", in.Scope)
			bound, problems := Bind(in.Params, action)
			canonical := bound.Canonical
			require.Empty(t, problems, "%s", in.Params)
			assert.Equal(t, in.ParamHash, Hash(canonical), "param_hash of %s", in.Params)
			if in.BoundParams != nil {
				assert.Equal(t, string(in.BoundParams), string(canonical), "canonical bytes")
			}
		})
	}
}

// recordedStart is the part of a workflow's recorded input this test reads.
type recordedStart struct {
	Scope       string          `json:"scope"`
	ParamHash   string          `json:"param_hash"`
	Params      json.RawMessage `json:"params"`
	BoundParams json.RawMessage `json:"bound_params"`
}

// recordedInput decodes the first input payload of a history's first event
// (WorkflowExecutionStarted), as `temporal workflow show --output json`
// writes it.
func recordedInput(t *testing.T, file string) recordedStart {
	t.Helper()
	raw, err := os.ReadFile(file)
	require.NoError(t, err)
	var h struct {
		Events []struct {
			Started *struct {
				Input struct {
					Payloads []struct {
						Data string `json:"data"`
					} `json:"payloads"`
				} `json:"input"`
			} `json:"workflowExecutionStartedEventAttributes"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal(raw, &h))
	require.NotEmpty(t, h.Events)
	started := h.Events[0].Started
	require.NotNil(t, started, "the first event starts the workflow")
	require.NotEmpty(t, started.Input.Payloads)
	data, err := base64.StdEncoding.DecodeString(started.Input.Payloads[0].Data)
	require.NoError(t, err)
	var in recordedStart
	require.NoError(t, json.Unmarshal(data, &in))
	return in
}
