package envconfig

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type Inner struct {
	Wait time.Duration `env:"WAIT" envDefault:"2s"`
}

type sample struct {
	Inner
	Name    string        `env:"NAME,required,notEmpty"`
	Count   *int          `env:"COUNT"`
	Nested  Inner         `envPrefix:"NESTED_"`
	Secret  string        `env:"SECRET_FILE,file"`
	Derived string        `env:"-"`
	Plain   time.Duration `env:"PLAIN"`
}

func TestParse(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("s3cret\n"), 0o600))
	c, err := Parse[sample](map[string]string{"NAME": " x ", "NESTED_WAIT": "5s", "SECRET_FILE": secret, "WAIT": "  "})
	require.NoError(t, err)
	assert.Equal(t, "x", c.Name, "values are trimmed")
	assert.Equal(t, 2*time.Second, c.Wait, "only spaces is unset: the default")
	assert.Equal(t, 5*time.Second, c.Nested.Wait)
	assert.Nil(t, c.Count, "unset pointer stays nil")
	assert.Equal(t, "s3cret\n", c.Secret, "the file's content")

	_, err = Parse[sample](map[string]string{"WAIT": "soon", "NESTED_WAIT": "later", "COUNT": "four", "SECRET_FILE": "/nonexistent"})
	require.Error(t, err)
	for _, want := range []string{
		`required environment variable "NAME" is not set`,
		`WAIT="soon" or NESTED_WAIT="later": unable to parse duration`, // both fields are named Wait
		`COUNT="four": strconv.ParseInt: parsing "four"`,
		`could not load content of file "/nonexistent" from variable SECRET_FILE`,
	} {
		assert.ErrorContains(t, err, want)
	}
	_, err = Parse[sample](map[string]string{"NAME": "x", "PLAIN": "1x"})
	assert.ErrorContains(t, err, `PLAIN="1x": unable to parse duration`)
}

func TestPositive(t *testing.T) {
	environ := map[string]string{"ZERO": "0s", "NEG": " -1s ", "BAD": "soon", "OK": "1s"}
	assert.ErrorContains(t, Positive(environ, "ZERO", 0), `ZERO="0s": want a positive duration`)
	assert.ErrorContains(t, Positive(environ, "NEG", -time.Second), `NEG="-1s": want a positive duration`)
	assert.NoError(t, Positive(environ, "BAD", 0), "Parse reported it already")
	assert.NoError(t, Positive(environ, "OK", time.Second))
	assert.NoError(t, Positive(environ, "UNSET", 2*time.Second), "the default")
}

func TestVars(t *testing.T) {
	vars, err := Vars[sample]()
	require.NoError(t, err)
	assert.Equal(t, []Var{
		{Name: "WAIT", Default: "2s", HasDefault: true},
		{Name: "NAME"},
		{Name: "COUNT"},
		{Name: "NESTED_WAIT", Default: "2s", HasDefault: true},
		{Name: "SECRET_FILE"},
		{Name: "PLAIN"},
	}, vars)
}
