package jcs

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestAppendString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"plain", "abc", `"abc"`},
		{"empty", "", `""`},
		{"quote and backslash", `a"b\c`, `"a\"b\\c"`},
		{"short escapes", "\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"other controls as lowercase hex", "\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"DEL, slash, HTML and non-ASCII literal", "\x7f/<&>é\u2028😀", "\"\x7f/<&>é\u2028😀\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, string(AppendString([]byte("x"), tt.in))[1:])
		})
	}
}

func TestCompareUTF16(t *testing.T) {
	t.Parallel()
	assert.Negative(t, CompareUTF16("\U0001F600", "\uFB01"))
	assert.Positive(t, CompareUTF16("\uFB01", "\U0001F600"))
	assert.Negative(t, CompareUTF16("a", "aa"))
	assert.Zero(t, CompareUTF16("é", "é"))
	assert.Negative(t, CompareUTF16("\U0001F600", "\U0001F601"))
}
