package api

import (
	"github.com/oncegate/oncegate/api/mcpserver"
	"github.com/oncegate/oncegate/status"
)

// Message keys that render a status other than under its own name.
const (
	keyPreviewReadyRepeat = "preview_ready_repeat"
	keyInvalidFilter      = "invalid_filter"
	keyInProgressPending  = "in_progress_pending"
)

// altKeys lists, by status, the message keys other than its name that
// render it (reply.key).
var altKeys = map[status.Status][]string{
	status.PreviewReady:           {keyPreviewReadyRepeat},
	status.TemporarilyUnavailable: {keyQuoteUnavailable},
	status.InvalidResolution:      {keyInvalidFilter},
	status.InProgress:             {keyInProgressPending},
	status.MalformedRequest:       {mcpserver.TransportMessageKey},
}

// messageKeys returns every message key that renders status.
func messageKeys(st status.Status) []string {
	return append([]string{string(st)}, altKeys[st]...)
}

// HeaderReplayed marks a replay of an operation's first outcome.
const HeaderReplayed = "Idempotent-Replayed"
