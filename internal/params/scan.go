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

// member is one top-level member of a params object as written: its name
// unescaped but not NFC-normalized (the name json.Unmarshal would key it
// by) and its value's bytes verbatim (a free param is sent downstream as
// the agent wrote it).
type member struct {
	name string
	raw  json.RawMessage
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
}

// scanners reuses a scanner's decoder and buffers across requests.
var scanners = sync.Pool{New: func() any {
	s := &scanner{}
	s.dec = jsontext.NewDecoder(&s.rd)
	return s
}}

// scanJSON parses raw like parseJSON and also returns the top-level
// members of an object, or ok false when raw is anything parseJSON might
// refuse or read differently.
func scanJSON(raw []byte) (v any, members []member, ok bool) {
	if len(raw) > MaxParamsBytes || !utf8.Valid(raw) {
		return nil, nil, false
	}
	s := scanners.Get().(*scanner)
	defer func() {
		s.rd.Reset(nil)
		s.dec.Reset(&s.rd)
		scanners.Put(s)
	}()
	s.rd.Reset(raw)
	s.dec.Reset(&s.rd)
	s.members = 0
	if s.dec.PeekKind() == '{' {
		v, members, ok = s.topObject(raw)
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

// topObject reads the top-level object, recording where each member's
// value starts and ends in raw.
func (s *scanner) topObject(raw []byte) (map[string]any, []member, bool) {
	if _, err := s.dec.ReadToken(); err != nil {
		return nil, nil, false
	}
	obj := make(map[string]any)
	members := make([]member, 0, membersHint)
	for s.dec.PeekKind() != '}' {
		name, key, ok := s.key(obj)
		if !ok {
			return nil, nil, false
		}
		start := s.dec.InputOffset()
		v, ok := s.value(2)
		if !ok {
			return nil, nil, false
		}
		end := s.dec.InputOffset()
		obj[key] = v
		// Between the name and its value there is only a colon and white
		// space, which no JSON value starts with.
		members = append(members, member{name: name, raw: bytes.TrimLeft(raw[start:end], " \t\r\n:")})
	}
	if _, err := s.dec.ReadToken(); err != nil {
		return nil, nil, false
	}
	return obj, members, true
}

// key reads an object member's name and returns it as written and
// NFC-normalized, refusing a name obj already holds.
func (s *scanner) key(obj map[string]any) (name, key string, ok bool) {
	tok, err := s.dec.ReadToken()
	if err != nil || tok.Kind() != '"' {
		return "", "", false
	}
	name = tok.String()
	key = norm.NFC.String(name)
	if _, dup := obj[key]; dup {
		return "", "", false
	}
	s.members++
	return name, key, s.members <= MaxMembers
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
		_, key, ok := s.key(obj)
		if !ok {
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
