package tlog

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// The fast path of DecodeCanonicalExportLine. An export line the service wrote is its
// own RFC 8785 form, so instead of canonicalizing it into a copy, comparing, and
// decoding it again through encoding/json, one pass checks that the line is canonical
// and notes where its top-level members lie; the record is then read from those slices.
// The fast path only ever accepts: whatever it cannot decide (an escape in a key or in
// an identity member, a missing or unknown member, an invalid field) goes to the slow
// path, which gives the same record or the same error as before. It accepts a line
// only if Canonicalize(line) == line, so the records are the slow path's.

// canonScan checks that in is exactly its RFC 8785 form, without building it.
type canonScan struct {
	in  []byte
	pos int
	num []byte // scratch for a re-printed number
	lim Limits // as CanonicalizeLimited's; zero: MaxDepth and no member bound
}

// rawMember is one top-level member of a canonical object: the key without its quotes
// (no escapes), its value, and the whole `"key":value` text.
type rawMember struct {
	key, value, text []byte
}

// scanCanonicalObject reports whether line is a JSON object that is its own RFC 8785
// form and whose keys hold no escapes, and appends its top-level members to ms.
func scanCanonicalObject(line []byte, ms []rawMember) ([]rawMember, bool) {
	s := canonScan{in: line}
	if len(line) == 0 || line[0] != '{' {
		return nil, false
	}
	ok := s.object(0, func(m rawMember) { ms = append(ms, m) })
	return ms, ok && s.pos == len(line)
}

// value checks the canonical value at s.pos, depth levels below the top.
func (s *canonScan) value(depth int) bool {
	if depth > MaxDepth || (s.lim.MaxDepth > 0 && depth > s.lim.MaxDepth) || s.pos >= len(s.in) {
		return false
	}
	switch c := s.in[s.pos]; {
	case c == '{':
		return s.object(depth, nil)
	case c == '[':
		return s.array(depth)
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return false
}

func (s *canonScan) literal(lit string) bool {
	if !bytes.HasPrefix(s.in[s.pos:], []byte(lit)) {
		return false
	}
	s.pos += len(lit)
	return true
}

// object checks the object at s.pos, depth levels below the top, whose keys must hold
// no escapes (escaped keys go to the slow path), and passes each member to member when
// it is not nil.
func (s *canonScan) object(depth int, member func(rawMember)) bool {
	s.pos++ // '{'
	var prev []byte
	for n := 0; ; n++ {
		first := n == 0
		if first && s.pos < len(s.in) && s.in[s.pos] == '}' {
			s.pos++
			return true
		}
		if s.lim.MaxMembers > 0 && n == s.lim.MaxMembers {
			return false
		}
		start := s.pos
		key, esc, ok := s.str()
		if !ok || esc || (!first && compareUTF16(string(prev), string(key)) >= 0) {
			return false
		}
		prev = key
		if s.pos >= len(s.in) || s.in[s.pos] != ':' {
			return false
		}
		s.pos++
		vstart := s.pos
		if !s.value(depth + 1) {
			return false
		}
		if member != nil {
			member(rawMember{key: key, value: s.in[vstart:s.pos], text: s.in[start:s.pos]})
		}
		if more, ok := s.next('}'); !more {
			return ok
		}
	}
}

func (s *canonScan) array(depth int) bool {
	s.pos++ // '['
	for first := true; ; first = false {
		if first && s.pos < len(s.in) && s.in[s.pos] == ']' {
			s.pos++
			return true
		}
		if !s.value(depth + 1) {
			return false
		}
		if more, ok := s.next(']'); !more {
			return ok
		}
	}
}

// next reads the ',' or the closing byte after a member or element: more when a ','
// was read, ok when the closing byte was.
func (s *canonScan) next(closing byte) (more, ok bool) {
	if s.pos >= len(s.in) {
		return false, false
	}
	switch s.in[s.pos] {
	case ',':
		s.pos++
		return true, true
	case closing:
		s.pos++
		return false, true
	}
	return false, false
}

// str checks a canonical string literal at s.pos (as appendString writes it: valid
// UTF-8, only '"', '\\' and control characters escaped, with the short forms where JSON
// has them and \u00xx otherwise). It returns the text between the quotes and whether
// it holds an escape.
func (s *canonScan) str() (raw []byte, esc, ok bool) {
	if s.pos >= len(s.in) || s.in[s.pos] != '"' {
		return nil, false, false
	}
	s.pos++
	start := s.pos
	for s.pos < len(s.in) {
		s.pos += plainASCII(s.in[s.pos:])
		if s.pos >= len(s.in) {
			break
		}
		c := s.in[s.pos]
		switch {
		case c == '"':
			raw = s.in[start:s.pos]
			s.pos++
			return raw, esc, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			esc = true
			if !s.escape() {
				return nil, false, false
			}
		case c < utf8.RuneSelf:
			s.pos++
		default:
			r, size := utf8.DecodeRune(s.in[s.pos:])
			if r == utf8.RuneError && size <= 1 {
				return nil, false, false
			}
			s.pos += size
		}
	}
	return nil, false, false
}

// escape checks one escape as appendString writes it.
func (s *canonScan) escape() bool {
	if s.pos+1 >= len(s.in) {
		return false
	}
	switch s.in[s.pos+1] {
	case '"', '\\', 'b', 't', 'n', 'f', 'r':
		s.pos += 2
		return true
	case 'u':
	default:
		return false
	}
	const hex = "0123456789abcdef"
	if s.pos+6 > len(s.in) || s.in[s.pos+2] != '0' || s.in[s.pos+3] != '0' || s.in[s.pos+4] > '1' {
		return false
	}
	hi := s.in[s.pos+4] - '0'
	lo := bytes.IndexByte([]byte(hex), s.in[s.pos+5])
	if hi > 1 || lo < 0 {
		return false
	}
	switch hi<<4 | byte(lo) {
	case '\b', '\t', '\n', '\f', '\r':
		return false // has a short form
	}
	s.pos += 6
	return true
}

// number checks that the literal at s.pos is what AppendNumber prints for its value,
// within the range Canonicalize accepts.
func (s *canonScan) number() bool {
	start := s.pos
	if s.in[s.pos] == '-' {
		s.pos++
	}
	intStart := s.pos
	for s.pos < len(s.in) && s.in[s.pos] >= '0' && s.in[s.pos] <= '9' {
		s.pos++
	}
	n := s.pos - intStart
	integer := s.pos >= len(s.in) || (s.in[s.pos] != '.' && s.in[s.pos] != 'e' && s.in[s.pos] != 'E')
	if integer && n > 0 && n <= 15 && (s.in[intStart] != '0' || (n == 1 && intStart == start)) {
		return true // a short integer without a leading zero is its own form ("-0" is not)
	}
	for s.pos < len(s.in) && (s.in[s.pos] == '.' || s.in[s.pos] == 'e' || s.in[s.pos] == 'E' ||
		s.in[s.pos] == '+' || s.in[s.pos] == '-' || (s.in[s.pos] >= '0' && s.in[s.pos] <= '9')) {
		s.pos++
	}
	lit := s.in[start:s.pos]
	// The slow parser's number rules, then a comparison with the printed form.
	p := canonParser{in: lit}
	out, err := p.number(s.num[:0])
	if err != nil || p.pos != len(lit) {
		return false
	}
	s.num = out
	return bytes.Equal(out, lit)
}

// plainString returns the value of a JSON string without escapes.
func plainString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return "", false
	}
	return string(v[1 : len(v)-1]), true
}

// decodeCanonicalFast is DecodeCanonicalExportLine for the lines it can decide alone;
// ok false sends the line to the slow path.
func decodeCanonicalFast(line []byte) (r Record, ok bool) {
	var buf [32]rawMember
	ms, ok := scanCanonicalObject(line, buf[:0])
	if !ok {
		return Record{}, false
	}
	var nonce string
	var haveNonce, haveSeq bool
	need := 0 // id, timestamp, projectId, stream, leafHash, payloadHash
	payloadLen, payloadN := 0, 0
	for i := range ms {
		m := &ms[i]
		var err error
		switch string(m.key) {
		case "id":
			r.Leaf.ID, ok = plainString(m.value)
			need++
		case "sequence":
			r.Leaf.Sequence, err = strconv.ParseUint(string(m.value), 10, 64)
			ok, haveSeq = err == nil, true
		case "timestamp":
			r.Leaf.Timestamp, ok = plainString(m.value)
			need++
		case "projectId":
			r.Leaf.ProjectID, ok = plainString(m.value)
			need++
		case "stream":
			r.Leaf.Stream, ok = plainString(m.value)
			need++
		case "leafHash", "payloadHash":
			var s string
			if s, ok = plainString(m.value); ok {
				h := &r.LeafHash
				if m.key[0] == 'p' {
					h = &r.Leaf.PayloadHash
				}
				*h, err = ParseHash(s)
				ok = err == nil
			}
			need++
		case "payloadNonce":
			nonce, ok = optionalPlain(m.value)
			haveNonce = true
		case "ciphertextHash":
			r.CiphertextHash, ok = optionalPlain(m.value)
		case "signingKeyId":
			r.Leaf.SigningKeyID, ok = optionalPlain(m.value)
		case "clientSignature":
			r.Leaf.Signature, ok = optionalPlain(m.value)
		default:
			if !IsPayloadMember(string(m.key)) {
				return Record{}, false
			}
			payloadLen += len(m.text) + 1
			payloadN++
		}
		if !ok {
			return Record{}, false
		}
	}
	if need != 6 || !haveSeq || !haveNonce || r.Leaf.Validate() != nil {
		return Record{}, false
	}
	if nonce == "" {
		if payloadN > 0 {
			return Record{}, false
		}
		return r, true
	}
	n, err := ParseNonce(nonce)
	if err != nil {
		return Record{}, false
	}
	r.Nonce = &n
	// The keys are in JCS order already and each member is canonical.
	p := make([]byte, 0, payloadLen+2)
	p = append(p, '{')
	for i := range ms {
		if m := &ms[i]; !isIdentityMember(m.key) {
			if len(p) > 1 {
				p = append(p, ',')
			}
			p = append(p, m.text...)
		}
	}
	r.Payload = append(p, '}')
	return r, true
}

// optionalPlain reads a member that is null or a non-empty string without escapes.
func optionalPlain(v []byte) (string, bool) {
	if string(v) == "null" {
		return "", true
	}
	s, ok := plainString(v)
	return s, ok && s != ""
}

func isIdentityMember(key []byte) bool {
	for _, k := range identityMembers {
		if string(key) == k {
			return true
		}
	}
	return false
}
