package api

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// traceFromHeader returns the trace id of a W3C traceparent header
// ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>"), or "" when the
// header is absent or invalid.
func traceFromHeader(tp string) (traceID, flags string) {
	parts := strings.Split(strings.TrimSpace(tp), "-")
	if len(parts) < 4 {
		return "", ""
	}
	version, trace, parent, fl := parts[0], parts[1], parts[2], parts[3]
	if !isLowerHexN(version, 2) || version == "ff" || (version == "00" && len(parts) != 4) {
		return "", ""
	}
	if !isLowerHexN(trace, 32) || trace == strings.Repeat("0", 32) ||
		!isLowerHexN(parent, 16) || parent == strings.Repeat("0", 16) || !isLowerHexN(fl, 2) {
		return "", ""
	}
	return trace, fl
}

// newTraceID returns 16 random bytes as 32 lowercase hex chars.
func newTraceID() string { return randomHex(16) }

// randomHex returns n random bytes as lowercase hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// traceparent builds the response's traceparent: the trace id with a new
// span id of the gateway.
func traceparent(traceID, flags string) string {
	if flags == "" {
		flags = "01"
	}
	return "00-" + traceID + "-" + randomHex(8) + "-" + flags
}

func isLowerHexN(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
