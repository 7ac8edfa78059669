package params

import (
	"encoding/json"
	"strconv"
	"sync"

	"github.com/cockroachdb/apd/v3"

	"github.com/oncegate/oncegate/internal/catalog"
	"github.com/oncegate/oncegate/internal/jcs"
)

// boundField is one bound field of an action as one call reads it: its
// name, a copy of its declaration (whose address the constraints are
// given), and its normalized value (nil when absent, null or refused)
// with, for a number, the decimal it was parsed to, so that neither the
// constraints nor the canonical writer parse it again.
type boundField struct {
	name   string
	field  catalog.Field
	value  any
	number *apd.Decimal
}

// boundFields are the bound fields of one call, sorted by name as the
// canonical bytes sort keys. They are reused across calls (borrowed from
// boundFieldsPool), so that the copies of the declarations whose address
// the constraints take are not moved to the heap on every call.
type boundFields struct {
	all []boundField
	// members is room for the top-level members of the params the call
	// reads (topObject), which nothing keeps once the call returns.
	members []member
}

// maxKeptMembers is the most members' room giveBack keeps for the next
// call; params with more members are rare, their room is dropped.
const maxKeptMembers = 4 * membersHint

// boundFieldsPool holds boundFields between calls.
var boundFieldsPool = sync.Pool{New: func() any { return new(boundFields) }}

// borrowBoundFields returns the bound fields of action (none when action
// is nil) without values; giveBack returns them.
func borrowBoundFields(action *catalog.Action) *boundFields {
	b := boundFieldsPool.Get().(*boundFields)
	if action != nil {
		b.read(action.Bind)
	}
	return b
}

// giveBack empties b, keeping nothing of the call alive, and returns it to
// the pool.
func (b *boundFields) giveBack() {
	b.empty()
	boundFieldsPool.Put(b)
}

// empty drops every value of the call from b: its fields' and its
// members' (also those a refused object wrote past the members kept), and
// a members' room too large to keep.
func (b *boundFields) empty() {
	clear(b.all)
	b.all = b.all[:0]
	clear(b.members[:cap(b.members)])
	b.members = b.members[:0]
	if cap(b.members) > maxKeptMembers {
		b.members = nil
	}
}

// read copies the declarations of bind into b, sorted by name by UTF-16
// code units (the canonical bytes' order of keys), without values yet.
func (b *boundFields) read(bind map[string]catalog.Field) {
	for name, f := range bind {
		b.all = append(b.all, boundField{name: name, field: f})
	}
	sortByName(b.all)
}

// sortByName sorts fields by name by UTF-16 code units with an insertion
// sort: an action binds a handful of fields.
func sortByName(fields []boundField) {
	for i := 1; i < len(fields); i++ {
		for j := i; j > 0 && jcs.CompareUTF16(fields[j-1].name, fields[j].name) > 0; j-- {
			fields[j-1], fields[j] = fields[j], fields[j-1]
		}
	}
}

// normalize checks the field's value v (present false when the params lack
// it) as normalizeBound does and keeps its normalized value and decimal,
// or returns the problem.
func (f *boundField) normalize(v any, present bool) *FieldProblem {
	value, number, problem := normalizeBound(f.name, f.field, v, present)
	f.value, f.number = value, number
	return problem
}

// appendCanonical appends the canonical bound params of docs/contract.md
// §3 to dst: what appendCanonical writes for the map of the fields'
// normalized values, written from the fields themselves (already sorted,
// their strings already NFC, their numbers already in canonical text).
func (b *boundFields) appendCanonical(dst []byte) []byte {
	dst = append(dst, '{')
	first := true
	for _, f := range b.all {
		if f.value == nil {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = jcs.AppendString(dst, f.name)
		dst = append(dst, ':')
		switch v := f.value.(type) {
		case string:
			dst = jcs.AppendString(dst, v)
		case json.Number:
			dst = append(dst, v...)
		case bool:
			dst = strconv.AppendBool(dst, v)
		}
	}
	return append(dst, '}')
}
