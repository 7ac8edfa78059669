package gateway

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// sign is the signature header of body at t: t=<unix>,v1=HMAC-SHA256(secret, "<t>.<body>").
func sign(secret string, t time.Time, body string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + body))
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// TestVerifySignature: the HMAC must match in full, under the action's
// secret, over this body; the timestamp must lie within the tolerance on
// either side of now.
func TestVerifySignature(t *testing.T) {
	t.Parallel()
	const secret, body, tolerance = "whsec", `{"type":"payout.paid"}`, 5 * time.Minute
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	good := sign(secret, now, body)
	_, goodHex, _ := strings.Cut(good, "v1=")
	sameLength := strings.Repeat("0", len(goodHex))
	tests := []struct {
		name   string
		header string
		body   string
		want   error
	}{
		{"valid", good, body, nil},
		{"one of several v1 valid", "t=" + strconv.FormatInt(now.Unix(), 10) + ",v1=" + sameLength + ",v1=" + goodHex, body, nil},
		{"another secret", sign("other", now, body), body, errWebhookBadSig},
		{"another body", good, `{"type":"payout.failed"}`, errWebhookBadSig},
		{"a wrong signature of the right length", "t=" + strconv.FormatInt(now.Unix(), 10) + ",v1=" + sameLength, body, errWebhookBadSig},
		{"a signature's prefix", "t=" + strconv.FormatInt(now.Unix(), 10) + ",v1=" + goodHex[:32], body, errWebhookBadSig},
		{"signed at the tolerance's start", sign(secret, now.Add(-tolerance), body), body, nil},
		{"signed at the tolerance's end", sign(secret, now.Add(tolerance), body), body, nil},
		{"signed before the tolerance", sign(secret, now.Add(-tolerance-time.Second), body), body, errWebhookStale},
		{"signed after the tolerance", sign(secret, now.Add(tolerance+time.Second), body), body, errWebhookStale},
		{"no timestamp", "v1=" + goodHex, body, errWebhookUnsigned},
		{"no signature", "t=" + strconv.FormatInt(now.Unix(), 10), body, errWebhookUnsigned},
		{"not hex", "t=" + strconv.FormatInt(now.Unix(), 10) + ",v1=zz", body, errWebhookUnsigned},
		{"no header", "", body, errWebhookUnsigned},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := verifySignature(tt.header, []byte(tt.body), secret, now, tolerance)
			if tt.want == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tt.want)
		})
	}
}
