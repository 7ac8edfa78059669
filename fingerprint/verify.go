package fingerprint

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/oncegate/oncegate/internal/jcs"
	"github.com/oncegate/oncegate/internal/keyspec"
)

// MaxFingerprintLen is the longest fingerprint Parse accepts, in bytes.
const MaxFingerprintLen = 2048

// macB64Len is the length of the base64url (unpadded) HMAC-SHA256 segment.
var macB64Len = base64.RawURLEncoding.EncodedLen(sha256.Size)

// Expectation is what a confirm expects of a fingerprint.
type Expectation struct {
	// Subject is the authenticated caller.
	Subject string
	// Scope is the action being confirmed.
	Scope string
	// ParamHash is the param_hash of the confirm's canonical bound params
	// (params.Hash).
	ParamHash string
	// Now is the verification time (the injectable clock); zero means time.Now().
	Now time.Time
	// AllowExpired skips the expiry check, for replaying an operation that
	// was already consumed.
	AllowExpired bool
}

// Verify parses fp and checks it against want. It returns exactly one
// outcome, in this precedence: an error wrapping ErrInvalid (bad form, unknown
// key or bad signature; the payload is then zero), ErrSubjectMismatch,
// ErrScopeMismatch, ErrParamMismatch, then ErrExpired when now >= exp (unless
// want.AllowExpired), else nil. Whenever the signature verified, the payload
// is returned too, so that a caller can look up the nonce's operation even
// for a mismatched or expired fingerprint.
func (k *Keyring) Verify(fp string, want Expectation) (Payload, error) {
	p, err := k.Parse(fp)
	switch {
	case err != nil:
		return Payload{}, err
	case p.Subject != want.Subject:
		return p, ErrSubjectMismatch
	case p.Scope != want.Scope:
		return p, ErrScopeMismatch
	case p.ParamHash != want.ParamHash:
		return p, ErrParamMismatch
	}
	if !want.AllowExpired {
		now := want.Now
		if now.IsZero() {
			now = time.Now()
		}
		if now.Unix() >= p.Exp {
			return p, ErrExpired
		}
	}
	return p, nil
}

// scratch holds the buffers of one Parse.
type scratch struct {
	seg     []byte // the first segment's ASCII bytes (HMAC input)
	payload []byte // the decoded payload JSON
	reenc   []byte // the payload re-encoded canonically
	mac     [sha256.Size + 3]byte
}

var scratchPool = sync.Pool{New: func() any {
	return &scratch{seg: make([]byte, 0, 512), payload: make([]byte, 0, 384), reenc: make([]byte, 0, 384)}
}}

// Parse checks fp's form and signature and returns its payload. It is
// strict: at most MaxFingerprintLen bytes; exactly one '.'; both segments
// canonical base64url without padding (only the 64 URL-safe characters, no
// non-zero trailing bits, so re-encoding gives the input back); a 32-byte
// MAC; a payload that is exactly what Sign writes (a JSON object with the
// fields n, exp, u, s, p, k and optionally r, in that order, each once, no
// other field, minimally escaped) with a 32-lowercase-hex n (and r), a
// positive integer exp, a 64-lowercase-hex p and non-empty u, s, k; a known
// key id; and an HMAC that matches, compared in constant time. Every failure
// wraps ErrInvalid. Parse does not check expiry or the expectation; Verify
// does.
func (k *Keyring) Parse(fp string) (Payload, error) {
	if len(fp) == 0 {
		return Payload{}, fmt.Errorf("%w: empty", ErrInvalid)
	}
	if len(fp) > MaxFingerprintLen {
		return Payload{}, fmt.Errorf("%w: %d bytes, more than %d", ErrInvalid, len(fp), MaxFingerprintLen)
	}
	dot := strings.IndexByte(fp, '.')
	if dot < 0 || strings.IndexByte(fp[dot+1:], '.') >= 0 {
		return Payload{}, fmt.Errorf("%w: want exactly one '.'", ErrInvalid)
	}
	seg, macSeg := fp[:dot], fp[dot+1:]
	if seg == "" || len(macSeg) != macB64Len || !isB64URL(seg) || !isB64URL(macSeg) {
		return Payload{}, fmt.Errorf("%w: segments are not base64url without padding", ErrInvalid)
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	enc := base64.RawURLEncoding.Strict()
	sc.seg = append(sc.seg[:0], seg...)
	sc.payload = sc.payload[:0]
	if n := enc.DecodedLen(len(seg)); cap(sc.payload) < n {
		sc.payload = make([]byte, 0, n)
	}
	n, err := enc.Decode(sc.payload[:cap(sc.payload)], sc.seg)
	if err != nil {
		return Payload{}, fmt.Errorf("%w: payload segment: %v", ErrInvalid, err)
	}
	sc.payload = sc.payload[:n]
	var macIn [64]byte
	copy(macIn[:], macSeg)
	if m, err := enc.Decode(sc.mac[:], macIn[:len(macSeg)]); err != nil || m != sha256.Size {
		return Payload{}, fmt.Errorf("%w: signature segment is not a base64url HMAC-SHA256", ErrInvalid)
	}
	p, err := decodePayload(string(sc.payload))
	if err != nil {
		return Payload{}, fmt.Errorf("%w: payload: %v", ErrInvalid, err)
	}
	if err := p.validate(); err != nil {
		return Payload{}, err
	}
	sc.reenc = appendPayload(sc.reenc[:0], &p)
	if !bytes.Equal(sc.reenc, sc.payload) {
		return Payload{}, fmt.Errorf("%w: payload is not in the canonical form Sign writes", ErrInvalid)
	}
	e, ok := k.byID[p.KeyID]
	if !ok {
		return Payload{}, fmt.Errorf("%w: unknown key id %q", ErrInvalid, p.KeyID)
	}
	st := e.get()
	st.h.Write(sc.seg)
	good := hmac.Equal(st.h.Sum(st.sum[:0]), sc.mac[:sha256.Size])
	e.put(st)
	if !good {
		return Payload{}, fmt.Errorf("%w: bad signature", ErrInvalid)
	}
	return p, nil
}

// isB64URL reports whether s uses only the base64url alphabet.
func isB64URL(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// appendPayload writes p as the payload JSON, always in this fixed field
// order: {"n":…,"exp":…,"u":…,"s":…,"p":…,"k":…} with ,"r":… only when
// RecentOperation is set and then ,"a":… only when Approval is set, before
// the closing brace; strings are escaped as
// jcs.AppendString does (RFC 8785 minimal escaping). This is the one encoding
// Sign produces and Parse accepts.
func appendPayload(dst []byte, p *Payload) []byte {
	dst = append(dst, `{"n":`...)
	dst = jcs.AppendString(dst, p.Nonce)
	dst = append(dst, `,"exp":`...)
	dst = strconv.AppendInt(dst, p.Exp, 10)
	dst = append(dst, `,"u":`...)
	dst = jcs.AppendString(dst, p.Subject)
	dst = append(dst, `,"s":`...)
	dst = jcs.AppendString(dst, p.Scope)
	dst = append(dst, `,"p":`...)
	dst = jcs.AppendString(dst, p.ParamHash)
	dst = append(dst, `,"k":`...)
	dst = jcs.AppendString(dst, p.KeyID)
	if p.RecentOperation != "" {
		dst = append(dst, `,"r":`...)
		dst = jcs.AppendString(dst, p.RecentOperation)
	}
	if p.Approval != "" {
		dst = append(dst, `,"a":`...)
		dst = jcs.AppendString(dst, p.Approval)
	}
	return append(dst, '}')
}

// decodePayload reads the fixed-order payload JSON that appendPayload
// writes. Any other shape (another order, an unknown, missing or repeated
// field, white space) is refused; the strings returned share s's memory.
func decodePayload(s string) (Payload, error) {
	d := payloadDecoder{s: s}
	var p Payload
	d.lit(`{"n":`)
	p.Nonce = d.str()
	d.lit(`,"exp":`)
	p.Exp = d.int()
	d.lit(`,"u":`)
	p.Subject = d.str()
	d.lit(`,"s":`)
	p.Scope = d.str()
	d.lit(`,"p":`)
	p.ParamHash = d.str()
	d.lit(`,"k":`)
	p.KeyID = d.str()
	if d.err == nil && strings.HasPrefix(d.s[d.i:], `,"r":`) {
		d.lit(`,"r":`)
		p.RecentOperation = d.str()
	}
	if d.err == nil && strings.HasPrefix(d.s[d.i:], `,"a":`) {
		d.lit(`,"a":`)
		p.Approval = d.str()
	}
	d.lit(`}`)
	if d.err == nil && d.i != len(d.s) {
		d.err = fmt.Errorf("data after the object at offset %d", d.i)
	}
	return p, d.err
}

// payloadDecoder is a cursor over a payload JSON; the first error sticks.
type payloadDecoder struct {
	s   string
	i   int
	err error
}

func (d *payloadDecoder) lit(want string) {
	if d.err != nil {
		return
	}
	if !strings.HasPrefix(d.s[d.i:], want) {
		d.err = fmt.Errorf("want %s at offset %d", want, d.i)
		return
	}
	d.i += len(want)
}

// int reads a positive decimal integer without leading zeros.
func (d *payloadDecoder) int() int64 {
	if d.err != nil {
		return 0
	}
	start := d.i
	for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
		d.i++
	}
	digits := d.s[start:d.i]
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 || digits[0] == '0' {
		d.err = fmt.Errorf("want a positive integer at offset %d", start)
		return 0
	}
	return n
}

// str reads a JSON string; only the escapes jcs.AppendString writes are
// accepted (the canonical re-encoding check refuses the rest).
func (d *payloadDecoder) str() string {
	if d.err != nil {
		return ""
	}
	start := d.i
	if d.i >= len(d.s) || d.s[d.i] != '"' {
		d.err = fmt.Errorf("want a string at offset %d", start)
		return ""
	}
	d.i++
	plain := d.i
	for d.i < len(d.s) {
		switch c := d.s[d.i]; {
		case c == '"':
			out := d.s[plain:d.i]
			d.i++
			return out
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			d.err = fmt.Errorf("control character in string at offset %d", d.i)
			return ""
		}
		d.i++
	}
	d.err = fmt.Errorf("unterminated string at offset %d", start)
	return ""
}

// escaped decodes the string starting at start that holds an escape.
func (d *payloadDecoder) escaped(start int) string {
	var b []byte
	d.i = start + 1
	for d.i < len(d.s) {
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			return string(b)
		case c < 0x20:
			d.err = fmt.Errorf("control character in string at offset %d", d.i)
			return ""
		case c != '\\':
			b = append(b, c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.s) {
			break
		}
		e := d.s[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			if d.i+4 > len(d.s) || d.s[d.i:d.i+2] != "00" {
				d.err = fmt.Errorf("unsupported \\u escape at offset %d", d.i-2)
				return ""
			}
			v, err := strconv.ParseUint(d.s[d.i+2:d.i+4], 16, 8)
			if err != nil || v >= 0x20 {
				d.err = fmt.Errorf("unsupported \\u escape at offset %d", d.i-2)
				return ""
			}
			b = append(b, byte(v))
			d.i += 4
		default:
			d.err = fmt.Errorf("unsupported escape at offset %d", d.i-2)
			return ""
		}
	}
	d.err = fmt.Errorf("unterminated string at offset %d", start)
	return ""
}

// validate checks the payload's fields as Parse requires; errors wrap ErrInvalid.
func (p *Payload) validate() error {
	switch {
	case !isLowerHex(p.Nonce, 32):
		return fmt.Errorf("%w: n must be 32 lowercase hex chars", ErrInvalid)
	case p.Exp <= 0:
		return fmt.Errorf("%w: exp must be a positive unix second", ErrInvalid)
	case p.Subject == "" || !utf8.ValidString(p.Subject):
		return fmt.Errorf("%w: u must be a non-empty UTF-8 string", ErrInvalid)
	case p.Scope == "" || !utf8.ValidString(p.Scope):
		return fmt.Errorf("%w: s must be a non-empty UTF-8 string", ErrInvalid)
	case !isLowerHex(p.ParamHash, 64):
		return fmt.Errorf("%w: p must be 64 lowercase hex chars", ErrInvalid)
	case !keyspec.ValidID(p.KeyID):
		return fmt.Errorf("%w: k must be a key id", ErrInvalid)
	case p.RecentOperation != "" && !isLowerHex(p.RecentOperation, 32):
		return fmt.Errorf("%w: r must be 32 lowercase hex chars when set", ErrInvalid)
	case p.Approval != "" && !validReasons(p.Approval):
		return fmt.Errorf("%w: a must be comma-separated reason codes (a-z and _) when set", ErrInvalid)
	}
	return nil
}

// validReasons reports whether s is comma-separated non-empty codes of
// lowercase letters and underscores, at most 256 bytes.
func validReasons(s string) bool {
	if len(s) > 256 {
		return false
	}
	for code := range strings.SplitSeq(s, ",") {
		if code == "" {
			return false
		}
		for i := 0; i < len(code); i++ {
			if c := code[i]; !(c >= 'a' && c <= 'z' || c == '_') {
				return false
			}
		}
	}
	return true
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
