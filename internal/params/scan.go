package params

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"golang.org/x/text/unicode/norm"
)

// member is one top-level member of a params object: its name as written,
// unescaped but not NFC-normalized (the name json.Unmarshal would key it
// by), its key (the name NFC-normalized, as the parser keys objects), its
// parsed value, and its value's bytes verbatim (a free param is sent
// downstream as the agent wrote it).
type member struct {
	name  string
	key   string
	value any
	raw   json.RawMessage
}

// scanner reads one JSON document with a jsontext.Decoder, which does not
// allocate per token, into the values parseJSONDecoder builds. It accepts
// only what that parser accepts too and gives up (ok false) on everything
// else: a syntax error, a limit, a duplicate key, several top-level
// values, a string jsontext refuses. The caller then asks the old parser,
// whose problems (their codes, texts and paths) are the ones the agent
// reads: the scanner saves CPU on valid params and decides no refusal.
type scanner struct {
	rd      bytes.Reader
	dec     *jsontext.Decoder
	members int
	// keys indexes the keys of a top-level object of many members
	// (fresh).
	keys map[string]struct{}
	// known are the bound fields of the action whose params are read
	// (nil when none), whose names spell the members' that are theirs.
	known *boundFields
}

// scanners reuses a scanner's decoder and buffers across requests.
var scanners = sync.Pool{New: func() any {
	s := &scanner{}
	s.dec = jsontext.NewDecoder(&s.rd)
	return s
}}

// scanJSON parses raw like parseJSON, or returns ok false when raw is
// anything parseJSON might refuse or read differently. A top-level object
// it returns as its members, in order (never nil, v nil); any other value
// as v (members nil).
func scanJSON(raw []byte) (v any, members []member, ok bool) {
	return scanParams(raw, nil)
}

// scanParams is scanJSON of the params of an action whose bound fields
// are known (nil for none): a top-level member that is one of them has the
// field's name, spelled by the catalog, so that its name is not copied.
func scanParams(raw []byte, known *boundFields) (v any, members []member, ok bool) {
	if len(raw) > MaxParamsBytes || !utf8.Valid(raw) {
		return nil, nil, false
	}
	s := scanners.Get().(*scanner)
	s.known = known
	defer func() {
		s.known = nil
		clear(s.keys)
		s.rd.Reset(nil)
		s.dec.Reset(&s.rd)
		scanners.Put(s)
	}()
	s.rd.Reset(raw)
	s.dec.Reset(&s.rd)
	s.members = 0
	if s.dec.PeekKind() == '{' {
		members, ok = s.topObject(raw)
	} else {
		v, ok = s.value(1)
	}
	if !ok {
		return nil, nil, false
	}
	if _, err := s.dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, nil, false
	}
	return v, members, true
}

// membersHint is the room topObject makes for members at first: enough
// for an action's params, so that the slice is allocated once.
const membersHint = 8

// topObject reads the top-level object's members, recording where each
// member's value starts and ends in raw. The members of an action's params
// are read into the room its bound fields keep (boundFields.members),
// grown if need be.
func (s *scanner) topObject(raw []byte) ([]member, bool) {
	if _, err := s.dec.ReadToken(); err != nil {
		return nil, false
	}
	var members []member
	if s.known != nil {
		members = s.known.members[:0]
	}
	if members == nil {
		members = make([]member, 0, membersHint)
	}
	for s.dec.PeekKind() != '}' {
		name, key, ok := s.memberKey()
		if !ok || !s.fresh(members, key) {
			return nil, false
		}
		start := s.dec.InputOffset()
		v, ok := s.value(2)
		if !ok {
			return nil, false
		}
		end := s.dec.InputOffset()
		// Between the name and its value there is only a colon and white
		// space, which no JSON value starts with.
		members = append(members, member{name: name, key: key, value: v, raw: bytes.TrimLeft(raw[start:end], " \t\r\n:")})
	}
	if _, err := s.dec.ReadToken(); err != nil {
		return nil, false
	}
	if s.known != nil {
		s.known.members = members // the room, grown, serves the next call
	}
	return members, true
}

// keysIndexedFrom is how many members a top-level object has before fresh
// indexes their keys in a map rather than searching them: few enough for
// a linear search to be the faster, and no object costs quadratic time.
const keysIndexedFrom = 16

// fresh reports whether key is none of members' keys, and indexes it once
// the object has many members.
func (s *scanner) fresh(members []member, key string) bool {
	if len(members) < keysIndexedFrom {
		for i := range members {
			if members[i].key == key {
				return false
			}
		}
		return true
	}
	if s.keys == nil {
		s.keys = make(map[string]struct{})
	}
	if len(s.keys) == 0 {
		for i := range members {
			s.keys[members[i].key] = struct{}{}
		}
	}
	if _, dup := s.keys[key]; dup {
		return false
	}
	s.keys[key] = struct{}{}
	return true
}

// key reads an object member's name and returns it as written and
// NFC-normalized, counting it among the members.
func (s *scanner) key() (name, key string, ok bool) {
	tok, ok := s.readName()
	if !ok {
		return "", "", false
	}
	return s.counted(tok.String())
}

// memberKey is key of a top-level member: a known field's name, when the
// member is one, is that field's string rather than a copy.
func (s *scanner) memberKey() (name, key string, ok bool) {
	tok, ok := s.readName()
	if !ok {
		return "", "", false
	}
	if s.known != nil {
		for i := range s.known.all {
			// The token's string is compared, not kept: not copied.
			if known := s.known.all[i].name; tok.String() == known {
				return s.counted(known)
			}
		}
	}
	return s.counted(tok.String())
}

// readName reads the token of an object member's name.
func (s *scanner) readName() (jsontext.Token, bool) {
	tok, err := s.dec.ReadToken()
	return tok, err == nil && tok.Kind() == '"'
}

// counted returns name as written and NFC-normalized, counting it among
// the members.
func (s *scanner) counted(name string) (string, string, bool) {
	s.members++
	return name, norm.NFC.String(name), s.members <= MaxMembers
}

// value reads one value at depth (the top-level value is depth 1).
func (s *scanner) value(depth int) (any, bool) {
	switch s.dec.PeekKind() {
	case '{':
		if depth > MaxDepth {
			return nil, false
		}
		return s.object(depth)
	case '[':
		if depth > MaxDepth {
			return nil, false
		}
		return s.array(depth)
	}
	tok, err := s.dec.ReadToken()
	if err != nil {
		return nil, false
	}
	switch tok.Kind() {
	case 'n':
		return nil, true
	case 't', 'f':
		return tok.Bool(), true
	case '"':
		return tok.String(), true
	case '0':
		return json.Number(tok.String()), true
	}
	return nil, false
}

func (s *scanner) object(depth int) (any, bool) {
	if _, err := s.dec.ReadToken(); err != nil {
		return nil, false
	}
	obj := make(map[string]any)
	for s.dec.PeekKind() != '}' {
		_, key, ok := s.key()
		if !ok {
			return nil, false
		}
		if _, dup := obj[key]; dup {
			return nil, false
		}
		v, ok := s.value(depth + 1)
		if !ok {
			return nil, false
		}
		obj[key] = v
	}
	if _, err := s.dec.ReadToken(); err != nil {
		return nil, false
	}
	return obj, true
}

func (s *scanner) array(depth int) (any, bool) {
	if _, err := s.dec.ReadToken(); err != nil {
		return nil, false
	}
	arr := make([]any, 0)
	for s.dec.PeekKind() != ']' {
		s.members++
		if s.members > MaxMembers {
			return nil, false
		}
		v, ok := s.value(depth + 1)
		if !ok {
			return nil, false
		}
		arr = append(arr, v)
	}
	if _, err := s.dec.ReadToken(); err != nil {
		return nil, false
	}
	return arr, true
}
