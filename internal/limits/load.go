package limits

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/apd/v3"
	"github.com/go-redis/redis_rate/v10"
	"gopkg.in/yaml.v3"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/iso4217"
)

// rawFile is the YAML document.
type rawFile struct {
	Budgets []rawBudget `yaml:"budgets"`
	Rates   []rawRate   `yaml:"rates"`
}

// rawBudget is one budget as written.
type rawBudget struct {
	Name         string           `yaml:"name"`
	Subject      string           `yaml:"subject"`
	Role         string           `yaml:"role"`
	Action       string           `yaml:"action"`
	Currency     string           `yaml:"currency"`
	PerOperation *catalog.Decimal `yaml:"per_operation"`
	Daily        *catalog.Decimal `yaml:"daily"`
	Monthly      *catalog.Decimal `yaml:"monthly"`
}

// rawRate is one rate as written: "20/minute".
type rawRate struct {
	Subject string `yaml:"subject"`
	Role    string `yaml:"role"`
	Preview string `yaml:"preview"`
	Confirm string `yaml:"confirm"`
}

// Load reads the limits file at path and validates it against cat; an
// empty path is no limits.
func Load(path string, cat *catalog.Catalog) (*Limits, error) {
	if path == "" {
		return &Limits{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load limits: %w", err)
	}
	l, err := Parse(data, cat)
	if err != nil {
		return nil, fmt.Errorf("load limits %s: %w", path, err)
	}
	return l, nil
}

// Parse decodes a limits file (unknown keys refused) and validates every
// budget and rate against cat, reporting every problem at once, each naming
// its entry and field.
func Parse(data []byte, cat *catalog.Catalog) (*Limits, error) {
	var raw rawFile
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(true)
	if err := dec.Decode(&raw); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("decode yaml: %w", err)
	}
	var errs []error
	problem := func(where, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", where, fmt.Sprintf(format, args...)))
	}
	l := &Limits{}
	names := map[string]bool{}
	for i, rb := range raw.Budgets {
		where := fmt.Sprintf("budgets[%d]", i)
		if rb.Name != "" {
			where += " (" + rb.Name + ")"
		}
		b := Budget{Name: rb.Name, Subject: rb.Subject, Role: rb.Role, Action: rb.Action, Currency: rb.Currency, Max: map[Window]apd.Decimal{}}
		switch {
		case rb.Name == "":
			problem(where, "name is required (it names the limit in answers)")
		case names[rb.Name]:
			problem(where, "name %q is used twice", rb.Name)
		}
		names[rb.Name] = true
		if (rb.Subject == "") == (rb.Role == "") {
			problem(where, "set exactly one of subject and role")
		}
		if rb.Action != "" {
			a, ok := cat.Lookup(rb.Action)
			switch {
			case !ok:
				problem(where, "action %q is not in the catalog", rb.Action)
			case a.Spend == nil:
				problem(where, "action %q declares no spend (its amount and currency fields) in the catalog", rb.Action)
			}
		}
		scale := -1
		if rb.Currency != "" {
			c, err := iso4217.Lookup(rb.Currency)
			if err != nil {
				problem(where, "currency: %v", err)
			} else {
				scale = c.Scale
			}
		}
		given := map[Window]*catalog.Decimal{PerOperation: rb.PerOperation, Daily: rb.Daily, Monthly: rb.Monthly}
		for _, w := range Windows {
			d := given[w]
			if d == nil {
				continue
			}
			v := *d.Apd()
			switch {
			case v.Sign() <= 0:
				problem(where, "%s: %s must be greater than 0", w, d)
			case scale >= 0 && -int(v.Exponent) > scale:
				problem(where, "%s: %s has more decimal places than %s allows (%d)", w, d, rb.Currency, scale)
			}
			b.Max[w] = v
		}
		if len(b.Max) == 0 {
			problem(where, "set at least one of per_operation, daily and monthly")
		}
		l.Budgets = append(l.Budgets, b)
	}
	if len(raw.Budgets) > 0 && !anySpends(cat) {
		errs = append(errs, errors.New("budgets: no action of the catalog declares a spend, so no budget can count anything"))
	}
	seen := map[string]bool{}
	for i, rr := range raw.Rates {
		where := fmt.Sprintf("rates[%d]", i)
		if (rr.Subject == "") == (rr.Role == "") {
			problem(where, "set exactly one of subject and role")
		}
		who := "subject " + rr.Subject
		if rr.Role != "" {
			who = "role " + rr.Role
		}
		if seen[who] {
			problem(where, "%s has a rate already", who)
		}
		seen[who] = true
		r := Rate{Subject: rr.Subject, Role: rr.Role}
		var err error
		if r.Preview, err = ParseRate(rr.Preview); err != nil {
			problem(where, "preview: %v", err)
		}
		if r.Confirm, err = ParseRate(rr.Confirm); err != nil {
			problem(where, "confirm: %v", err)
		}
		if r.Preview.IsZero() && r.Confirm.IsZero() {
			problem(where, "set preview, confirm or both")
		}
		l.Rates = append(l.Rates, r)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return l, nil
}

// anySpends reports whether some action of cat declares a spend.
func anySpends(cat *catalog.Catalog) bool {
	for _, a := range cat.Actions {
		if a.Spend != nil {
			return true
		}
	}
	return false
}

// periods are the units a rate may be given in.
var periods = map[string]time.Duration{
	"s": time.Second, "second": time.Second,
	"m": time.Minute, "minute": time.Minute,
	"h": time.Hour, "hour": time.Hour,
}

// ParseRate reads "N/unit" (unit second, minute or hour; s, m, h): at most
// N requests per unit, in a burst of up to N. Empty is no limit (zero).
func ParseRate(s string) (redis_rate.Limit, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return redis_rate.Limit{}, nil
	}
	n, unit, ok := strings.Cut(s, "/")
	count, err := strconv.Atoi(strings.TrimSpace(n))
	period, known := periods[strings.TrimSpace(unit)]
	switch {
	case !ok || err != nil || !known:
		return redis_rate.Limit{}, fmt.Errorf("%q: want requests per unit, such as 20/minute (units: second, minute, hour)", s)
	case count <= 0:
		return redis_rate.Limit{}, fmt.Errorf("%q: the count must be greater than 0", s)
	}
	return redis_rate.Limit{Rate: count, Burst: count, Period: period}, nil
}
