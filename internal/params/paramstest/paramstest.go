// Package paramstest reads the one table of decimal strings
// (internal/params/testdata/decimal_strings.json) that both the gateway's
// parser and the tool schemas' patterns are checked against.
package paramstest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// DecimalRow is one string of the table and what each side must answer.
type DecimalRow struct {
	// S is the string, as an agent sends it.
	S string `json:"s"`
	// Decimal says whether params.DecimalPattern, and so the gateway's
	// parser of decimal strings, accepts it.
	Decimal bool `json:"decimal"`
	// Problem is the problem code of the refusal ("" when accepted).
	Problem string `json:"problem"`
	// Plain is the repair the refusal suggests ("" when none).
	Plain string `json:"plain"`
	// Amount says whether the dev catalog's amount field accepts it (with
	// Currency), in the gateway and in its tool schema's pattern.
	Amount bool `json:"amount"`
}

// DecimalTable is the table.
type DecimalTable struct {
	// Currency is the currency the Amount column is judged with.
	Currency string `json:"currency"`
	// Rows are the strings.
	Rows []DecimalRow `json:"rows"`
}

// ReadDecimalTable reads the table from internal/params/testdata.
func ReadDecimalTable() (DecimalTable, error) {
	_, file, _, _ := runtime.Caller(0)
	path := filepath.Join(filepath.Dir(file), "..", "testdata", "decimal_strings.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return DecimalTable{}, fmt.Errorf("read decimal table: %w", err)
	}
	var tab DecimalTable
	if err := json.Unmarshal(raw, &tab); err != nil {
		return DecimalTable{}, fmt.Errorf("decode %s: %w", path, err)
	}
	if len(tab.Rows) == 0 {
		return DecimalTable{}, fmt.Errorf("%s has no rows", path)
	}
	return tab, nil
}
