package messages

import (
	"reflect"
	"strconv"
	"text/template"
	tree "text/template/parse"
)

// compiled is a text whose template uses only literal text, {{.Field}},
// and {{if}}/{{else}} on .Field, not .Field or eq .Field "literal": the
// whole grammar of the catalogs. It renders the same bytes as its
// template (TestCompiledMatchesTemplate) without text/template's
// reflection per node, about a tenth of a handler's CPU. A text using
// anything else is not compiled and renders through its template.
type compiled []op

// op is one step of a compiled text: a literal, a field's value, or a
// condition choosing between two compiled texts.
type op struct {
	text  string
	field int // index into Data; -1 for a literal
	kind  fieldKind
	cond  *cond
}

// fieldKind is how a field of Data prints and tests true.
type fieldKind int

// The kinds of fields compiled supports.
const (
	kindString fieldKind = iota
	kindInt
	kindBool
)

// cond is an {{if}}: its test on a field and its two branches.
type cond struct {
	field int
	kind  fieldKind
	// not negates the field's truth (if not .Field).
	not bool
	// eq, when set, compares the string field with it (if eq .Field "x").
	eq        *string
	then, els compiled
}

// dataType is the type the texts are filled with.
var dataType = reflect.TypeFor[Data]()

// compile returns t's compiled text, or false when t uses more than
// compiled supports.
func compile(t *template.Template) (compiled, bool) {
	if t.Tree == nil || t.Tree.Root == nil {
		return nil, false
	}
	return compileList(t.Tree.Root)
}

func compileList(list *tree.ListNode) (compiled, bool) {
	if list == nil {
		return nil, true
	}
	var out compiled
	for _, n := range list.Nodes {
		switch n := n.(type) {
		case *tree.TextNode:
			out = append(out, op{text: string(n.Text), field: -1})
		case *tree.ActionNode:
			if len(n.Pipe.Decl) > 0 || len(n.Pipe.Cmds) != 1 || len(n.Pipe.Cmds[0].Args) != 1 {
				return nil, false
			}
			i, kind, ok := fieldIndex(n.Pipe.Cmds[0].Args[0])
			if !ok {
				return nil, false
			}
			out = append(out, op{field: i, kind: kind})
		case *tree.IfNode:
			c, ok := compileIf(n)
			if !ok {
				return nil, false
			}
			out = append(out, op{field: -1, cond: c})
		default:
			return nil, false
		}
	}
	return out, true
}

// compileIf compiles {{if .F}}, {{if not .F}} and {{if eq .F "x"}}.
func compileIf(n *tree.IfNode) (*cond, bool) {
	if len(n.Pipe.Decl) > 0 || len(n.Pipe.Cmds) != 1 {
		return nil, false
	}
	args := n.Pipe.Cmds[0].Args
	c := &cond{}
	var ok bool
	switch {
	case len(args) == 1:
		c.field, c.kind, ok = fieldIndex(args[0])
	case len(args) == 2 && isIdent(args[0], "not"):
		c.not = true
		c.field, c.kind, ok = fieldIndex(args[1])
	case len(args) == 3 && isIdent(args[0], "eq"):
		s, isString := args[2].(*tree.StringNode)
		if !isString {
			return nil, false
		}
		c.eq = &s.Text
		c.field, c.kind, ok = fieldIndex(args[1])
		ok = ok && c.kind == kindString
	}
	if !ok {
		return nil, false
	}
	if c.then, ok = compileList(n.List); !ok {
		return nil, false
	}
	if c.els, ok = compileList(n.ElseList); !ok {
		return nil, false
	}
	return c, true
}

// isIdent reports whether n is the function name.
func isIdent(n tree.Node, name string) bool {
	id, ok := n.(*tree.IdentifierNode)
	return ok && id.Ident == name
}

// fieldIndex is the index in Data of a one-name field node whose type
// compiled prints as text/template does (string, int, int64, bool).
func fieldIndex(n tree.Node) (int, fieldKind, bool) {
	f, ok := n.(*tree.FieldNode)
	if !ok || len(f.Ident) != 1 {
		return 0, 0, false
	}
	sf, ok := dataType.FieldByName(f.Ident[0])
	if !ok || len(sf.Index) != 1 {
		return 0, 0, false
	}
	k := sf.Type.Kind()
	if k == reflect.String {
		return sf.Index[0], kindString, true
	}
	if k == reflect.Int || k == reflect.Int64 {
		return sf.Index[0], kindInt, true
	}
	if k == reflect.Bool {
		return sf.Index[0], kindBool, true
	}
	return 0, 0, false
}

// appendTo appends the text filled with d to b.
func (c compiled) appendTo(b []byte, d reflect.Value) []byte {
	for _, o := range c {
		switch {
		case o.cond != nil:
			if o.cond.holds(d) {
				b = o.cond.then.appendTo(b, d)
			} else {
				b = o.cond.els.appendTo(b, d)
			}
		case o.field < 0:
			b = append(b, o.text...)
		default:
			b = appendValue(b, o.kind, d.Field(o.field))
		}
	}
	return b
}

// holds is the condition's truth on d, as text/template decides it.
func (c *cond) holds(d reflect.Value) bool {
	v := d.Field(c.field)
	if c.eq != nil {
		return v.String() == *c.eq
	}
	return truth(c.kind, v) != c.not
}

// truth is text/template's truth of a string, integer or boolean.
func truth(kind fieldKind, v reflect.Value) bool {
	switch kind {
	case kindString:
		return v.Len() > 0
	case kindInt:
		return v.Int() != 0
	case kindBool:
		return v.Bool()
	}
	return false
}

// appendValue prints v as text/template does (fmt's %v).
func appendValue(b []byte, kind fieldKind, v reflect.Value) []byte {
	switch kind {
	case kindString:
		return append(b, v.String()...)
	case kindInt:
		return strconv.AppendInt(b, v.Int(), 10)
	case kindBool:
		return strconv.AppendBool(b, v.Bool())
	}
	return b
}
