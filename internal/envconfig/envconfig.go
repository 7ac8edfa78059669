// Package envconfig parses a binary's configuration struct from the
// environment with github.com/caarlos0/env/v11: the struct's `env` tags
// name the variables, `envDefault` their defaults, `envPrefix` and nested
// structs the shared pieces. On top of the library it trims every value
// (so a variable holding only spaces is unset, as it always was) and names
// the variable and its value in a malformed-value error, where the library
// names the Go field.
package envconfig

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"
)

// OS returns the process's environment, the argument Parse takes in a main.
func OS() map[string]string { return env.ToMap(os.Environ()) }

// Parse fills a T from environ (name → value) by T's `env` tags. It reports
// every missing required variable, unreadable file and malformed value at
// once, each naming its variable. On error the returned T holds what did
// parse, so that a caller can add its own checks to the report.
func Parse[T any](environ map[string]string) (T, error) {
	trimmed := make(map[string]string, len(environ))
	for k, v := range environ {
		trimmed[k] = strings.TrimSpace(v)
	}
	c, err := env.ParseAsWithOptions[T](env.Options{Environment: trimmed})
	if err == nil {
		return c, nil
	}
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return c, fmt.Errorf("parse environment: %w", err)
	}
	keys := fieldKeys(reflect.TypeFor[T](), "", map[string][]string{})
	errs := make([]error, 0, len(agg.Errors))
	for _, e := range agg.Errors {
		errs = append(errs, named(e, keys, trimmed))
	}
	return c, errors.Join(errs...)
}

// named rewrites the library's parse error, which names the Go field, into
// NAME="value": why. The library's other errors already name the variable.
func named(err error, keys map[string][]string, environ map[string]string) error {
	var pe env.ParseError
	if !errors.As(err, &pe) {
		return err
	}
	var parts []string
	for _, k := range keys[pe.Name] {
		parts = append(parts, fmt.Sprintf("%s=%q", k, environ[k]))
	}
	if len(parts) == 0 {
		return err
	}
	return fmt.Errorf("%s: %w", strings.Join(parts, " or "), pe.Err)
}

// fieldKeys maps each Go field name of t to the variables fields of that
// name read, following nested structs and their envPrefix as the library
// does. A name shared by fields of two nested structs maps to both.
func fieldKeys(t reflect.Type, prefix string, out map[string][]string) map[string][]string {
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || len(f.Index) > 1 {
			continue // promoted fields are walked through their embedded struct
		}
		key, _, _ := strings.Cut(f.Tag.Get("env"), ",")
		if key != "" && key != "-" {
			out[f.Name] = append(out[f.Name], prefix+key)
		}
		// Parse starts from a zero T, so the library never follows a
		// pointer to a struct (only non-nil ones); neither does this.
		if f.Type.Kind() == reflect.Struct && key != "-" {
			fieldKeys(f.Type, prefix+f.Tag.Get("envPrefix"), out)
		}
	}
	return out
}

// Positive reports the duration variable name, parsed into d, when it is
// set to zero or less. A variable unset (d is its default) or malformed
// (Parse reported it) is not reported.
func Positive(environ map[string]string, name string, d time.Duration) error {
	v := strings.TrimSpace(environ[name])
	if _, err := time.ParseDuration(v); d > 0 || err != nil {
		return nil
	}
	return fmt.Errorf("%s=%q: want a positive duration such as 2s", name, v)
}

// Var is one variable a configuration struct reads.
type Var struct {
	// Name is the variable's name, prefixes applied.
	Name string
	// Default is its envDefault, "" without one.
	Default string
	// HasDefault tells an empty default from none.
	HasDefault bool
}

// Vars lists the variables T reads, in field order: what the
// configuration table of docs/ARCHITECTURE.md must document.
func Vars[T any]() ([]Var, error) {
	var t T
	params, err := env.GetFieldParams(&t)
	if err != nil {
		return nil, fmt.Errorf("list variables of %T: %w", t, err)
	}
	vars := make([]Var, 0, len(params))
	for _, p := range params {
		vars = append(vars, Var{Name: p.Key, Default: p.DefaultValue, HasDefault: p.HasDefaultValue})
	}
	return vars, nil
}

// ValidName reports whether s can name an environment variable: letters,
// digits and underscores, not starting with a digit.
func ValidName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
