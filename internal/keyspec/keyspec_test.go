package keyspec_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/oncegate/oncegate/internal/keyspec"
)

func TestParse(t *testing.T) {
	t.Parallel()
	b := []byte{0xfb, 0xff, 0x01}
	got, err := keyspec.Parse(" new:" + base64.StdEncoding.EncodeToString(b) + ", old:" + base64.RawURLEncoding.EncodeToString(b) + " ")
	require.NoError(t, err)
	assert.Equal(t, []keyspec.Entry{{ID: "new", Secret: b}, {ID: "old", Secret: b}}, got)

	ok := base64.StdEncoding.EncodeToString(b)
	for name, spec := range map[string]string{
		"empty":          " ",
		"no colon":       "k1",
		"empty secret":   "k1:",
		"not base64":     "k1:!!!!",
		"duplicate kid":  "k1:" + ok + ",k1:" + ok,
		"bad kid char":   "k/1:" + ok,
		"empty kid":      ":" + ok,
		"blank entry":    "k1:" + ok + ",",
		"kid with space": "k 1:" + ok,
		"kid too long":   strings.Repeat("k", keyspec.MaxIDLen+1) + ":" + ok,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := keyspec.Parse(spec)
			assert.Error(t, err)
		})
	}
}

func TestValidID(t *testing.T) {
	t.Parallel()
	for id, want := range map[string]bool{
		"dev-20261201": true, "A.b_c-9": true, strings.Repeat("k", keyspec.MaxIDLen): true,
		"": false, "k/1": false, "k 1": false, "ключ": false, strings.Repeat("k", keyspec.MaxIDLen+1): false,
	} {
		assert.Equal(t, want, keyspec.ValidID(id), id)
	}
}
