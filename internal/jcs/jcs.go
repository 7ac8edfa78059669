// Package jcs holds the pieces of RFC 8785 (the JSON Canonicalization
// Scheme) that oncegate's canonical forms use: string escaping, which both
// the canonical bound params and the fingerprint's payload write with
// AppendString, and the UTF-16 order of object keys. It is a leaf, so the
// params code and the fingerprint code need not depend on each other.
package jcs

import "unicode/utf8"

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string escaped as RFC 8785 (and
// ECMAScript's JSON.stringify) does: only '"', '\\' and control characters
// are escaped, the usual ones as \b \f \n \r \t, the others as \u00xx with
// lowercase hex; everything else, "/" and non-ASCII included, is literal.
// s must be valid UTF-8.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// CompareUTF16 orders strings by their UTF-16 code units, as RFC 8785
// requires for object keys. It differs from byte (code point) order only
// when a supplementary character (a surrogate pair in UTF-16) meets a
// character in U+E000..U+FFFF.
func CompareUTF16(a, b string) int {
	for a != "" && b != "" {
		if a[0] < utf8.RuneSelf && b[0] < utf8.RuneSelf {
			if a[0] != b[0] {
				return int(a[0]) - int(b[0])
			}
			a, b = a[1:], b[1:]
			continue
		}
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ha, la := utf16Units(ra)
			hb, lb := utf16Units(rb)
			if ha != hb {
				return int(ha) - int(hb)
			}
			return int(la) - int(lb)
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// utf16Units returns r's first and (for a supplementary character) second
// UTF-16 code unit.
func utf16Units(r rune) (uint16, uint16) {
	if r < 0x10000 {
		return uint16(r), 0
	}
	r -= 0x10000
	return uint16(0xD800 + r>>10), uint16(0xDC00 + r&0x3FF)
}
