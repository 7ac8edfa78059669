package mandate

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/cockroachdb/apd/v3"

	"github.com/oncegate/oncegate/internal/jcs"
)

// StatementVersion names the statement's format; it is part of what is signed.
const StatementVersion = "oncegate-mandate/1"

// Statement is the canonical statement of m, what its person's passkey
// signs: every bound (id, subject, actions, currency, the three maxima,
// the payees, not_before and expires_at as unix seconds), as RFC 8785 JSON
// (keys sorted, no white space), with decimals as reduced decimal strings
// ("100", "12.5"):
//
//	{"actions":[…],"currency":…,"expires_at":…,"mandate_id":…,"max_count":…,
//	"max_per_operation":"…","max_total":"…","not_before":…,"payees":[…]|"known",
//	"subject":…,"v":"oncegate-mandate/1"}
//
// The description is not in it: free text is never authority. Any language
// can rebuild it from the mandate's answer.
func Statement(m Mandate) []byte {
	b := make([]byte, 0, 384)
	b = append(b, `{"actions":`...)
	b = appendStrings(b, m.Actions)
	b = append(b, `,"currency":`...)
	b = jcs.AppendString(b, m.Currency)
	b = append(b, `,"expires_at":`...)
	b = strconv.AppendInt(b, m.ExpiresAt.Unix(), 10)
	b = append(b, `,"mandate_id":`...)
	b = jcs.AppendString(b, m.ID)
	b = append(b, `,"max_count":`...)
	b = strconv.AppendInt(b, int64(m.MaxCount), 10)
	b = append(b, `,"max_per_operation":`...)
	b = jcs.AppendString(b, DecimalText(&m.MaxPerOperation))
	b = append(b, `,"max_total":`...)
	b = jcs.AppendString(b, DecimalText(&m.MaxTotal))
	b = append(b, `,"not_before":`...)
	b = strconv.AppendInt(b, m.NotBefore.Unix(), 10)
	b = append(b, `,"payees":`...)
	if m.PayeesKnown {
		b = jcs.AppendString(b, PayeesKnown)
	} else {
		b = appendStrings(b, m.Payees)
	}
	b = append(b, `,"subject":`...)
	b = jcs.AppendString(b, m.Subject)
	b = append(b, `,"v":`...)
	b = jcs.AppendString(b, StatementVersion)
	return append(b, '}')
}

// Challenge is the WebAuthn challenge of m's statement: its SHA-256.
func Challenge(m Mandate) []byte {
	sum := sha256.Sum256(Statement(m))
	return sum[:]
}

// StatementSHA256 is the lowercase hex SHA-256 of m's statement: what the
// claim, the record, the receipt and the workflow input name.
func StatementSHA256(m Mandate) string { return hex.EncodeToString(Challenge(m)) }

// DecimalText is d reduced (no trailing zeros, no exponent): "100.00" is "100".
func DecimalText(d *apd.Decimal) string {
	var r apd.Decimal
	r.Reduce(d)
	return r.Text('f')
}

// appendStrings appends ss as a JSON array of JCS strings.
func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = jcs.AppendString(b, s)
	}
	return append(b, ']')
}
