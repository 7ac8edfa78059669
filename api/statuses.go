package api

import (
	"github.com/oncegate/oncegate/api/mcpserver"
	"github.com/oncegate/oncegate/gateway"
	"github.com/oncegate/oncegate/status"
)

// messageKeys returns every message key that renders status: its name, the
// service's other keys of it (gateway.AltKeys), and the MCP transport's.
func messageKeys(st status.Status) []string {
	keys := append([]string{string(st)}, gateway.AltKeys[st]...)
	if st == status.MalformedRequest {
		keys = append(keys, mcpserver.TransportMessageKey)
	}
	return keys
}

// HeaderReplayed marks a replay of an operation's first outcome.
const HeaderReplayed = "Idempotent-Replayed"
