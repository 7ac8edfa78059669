// Package plainjson tells which strings encoding/json writes unchanged
// between quotes, eight bytes at a time: the answers' writers (package api)
// and the answer forms of stored results (package gateway) copy those
// directly instead of encoding them.
package plainjson

import "encoding/binary"

// Plain reports whether encoding/json writes s unchanged between quotes:
// printable ASCII without the characters it escapes (quote, backslash, <,
// > and &). It tests eight bytes at a time (word), the rest one by one.
func Plain[T ~string | ~[]byte](s T) bool {
	for len(s) >= 8 {
		if !word(binary.LittleEndian.Uint64([]byte(s[:8]))) {
			return false
		}
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// Bytes repeated in each of a word's eight (ones) and their high bits.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// word reports whether all eight bytes of x are plain. A byte below
// 0x20 has its high bit set once 0x20 is taken from it, one from 0x7f to
// 0xfe once 1 is added, 0xff once 0x20 is taken; a borrow or carry that
// crosses into the next byte only follows such a byte, so the answer is
// exact. The escaped characters are the zero bytes of x xor
// the character (zeroBytes).
func word(x uint64) bool {
	bad := (x - ones*0x20) | (x + ones) |
		zeroBytes(x^(ones*'"')) | zeroBytes(x^(ones*'\\')) | zeroBytes(x^(ones*'<')) | zeroBytes(x^(ones*'>')) | zeroBytes(x^(ones*'&'))
	return bad&highs == 0
}

// zeroBytes has the high bit of each zero byte of v set (others may be set
// only above a zero byte).
func zeroBytes(v uint64) uint64 {
	return (v - ones) &^ v
}
