package messages

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"text/template"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dataValues are the values randomData draws from: empty and not, and
// every literal the texts compare a field with.
var dataValues = []string{"", "x", "0", "DONE", "APPROVED", "PENDING", "NEEDS_REVIEW", "failed", "degraded",
	"downstream_refused", "operator_decision", "not_sent", "not_executed", "<a & \"b\">", " 空白 "}

// randomData fills every field of Data at random.
func randomData(r *rand.Rand) Data {
	var d Data
	v := reflect.ValueOf(&d).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if k := f.Kind(); k == reflect.String {
			f.SetString(dataValues[r.IntN(len(dataValues))])
		} else if k == reflect.Int || k == reflect.Int64 {
			f.SetInt([]int64{0, 1, 3, 1500, -2}[r.IntN(5)])
		} else if k == reflect.Bool {
			f.SetBool(r.IntN(2) == 1)
		}
	}
	return d
}

// viaTemplate renders t through text/template alone, as every text was
// rendered before compiled.
func viaTemplate(t *text, d Data) (string, error) {
	var b strings.Builder
	err := t.tmpl.Execute(&b, d)
	return strings.TrimSpace(b.String()), err
}

// TestCompiledMatchesTemplate proves every text of both languages is
// compiled and renders word for word what its template renders, for
// thousands of random Data.
func TestCompiledMatchesTemplate(t *testing.T) {
	t.Parallel()
	c, err := Load()
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(23, 7))
	for _, lang := range Langs {
		for key, e := range c.texts[lang] {
			for _, tx := range []*text{e.meaning, e.instruction, e.text} {
				if tx == nil {
					continue
				}
				require.NotNil(t, tx.fast, "%s/%s (%s) is not compiled: extend compile or keep the text to its grammar", lang, key, tx.tmpl.Name())
				for range 300 {
					d := randomData(r)
					want, err := viaTemplate(tx, d)
					require.NoError(t, err)
					got, err := execute(tx, &d)
					require.NoError(t, err)
					require.Equal(t, want, got, "%s/%s with %+v", lang, key, d)
				}
			}
		}
	}
}

// TestCompileRefusesWhatItCannotRender proves a construct beyond
// compiled's grammar keeps its template, which renders it.
func TestCompileRefusesWhatItCannotRender(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		`{{.Missing}}`, `{{printf "%s" .Scope}}`, `{{range .Scope}}{{end}}`, `{{with .Scope}}{{.}}{{end}}`,
		`{{if eq .PollAfterMS "1"}}x{{end}}`, `{{if and .Scope .Path}}x{{end}}`, `{{$x := .Scope}}`, `{{.Scope | len}}`,
	} {
		tmpl, err := template.New("t").Option("missingkey=error").Parse(src)
		require.NoError(t, err, src)
		_, ok := compile(tmpl)
		assert.False(t, ok, src)
	}
	tmpl := template.Must(template.New("t").Parse(`a {{if not .Scope}}none{{else if eq .State "DONE"}}done {{.PollAfterMS}}{{else}}{{.NothingExecuted}}{{end}}`))
	fast, ok := compile(tmpl)
	require.True(t, ok)
	for _, d := range []Data{{}, {Scope: "s", State: "DONE", PollAfterMS: 12}, {Scope: "s", NothingExecuted: true}} {
		want, err := viaTemplate(&text{tmpl: tmpl}, d)
		require.NoError(t, err)
		got, err := execute(&text{tmpl: tmpl, fast: fast}, &d)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}
