package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/sealtrail/sealtrail/tlog"
)

// Limits on event input beyond the spec's (which are marked spec). Lengths count UTF-16
// code units, as the spec's clients do.
const (
	maxAction      = 256 // spec
	maxEntityType  = 128 // spec
	maxEntityID    = 512 // spec
	maxDisplay     = 1024
	maxAttribution = 1024
	maxHashField   = 512
	maxSigningKey  = 128
	// The shape of an ingest body (docs/api-decisions.md): members of any one object,
	// and levels of objects and arrays below the event object.
	maxObjectMembers = 1000
	maxJSONDepth     = 32
)

var (
	statuses = []string{"success", "failed", "pending", "approved", "denied"}
	risks    = []string{"low", "medium", "high", "critical"}
	// attribution are the optional string members of an event.
	attribution = []string{"requestId", "sessionId", "ipAddress", "userAgent", "agentId", "model", "toolName",
		"toolCallId", "approvalId", "policyVersion"}
	transport = []string{"id", "nonce", "signingKeyId", "signature"}
)

// eventInput is a validated ingest body.
type eventInput struct {
	members members // payload members, canonical values, in canonical order
	action  string
	status  string // "" when absent
	actor   entity
	target  *entity

	id, nonce, signingKeyID, signature string
}

type entity struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Display string `json:"display,omitempty"`
}

// nulMessage is the field error for U+0000 in a schema string: PostgreSQL text cannot
// hold it, and every such string may be indexed, filtered on or put in a CSV cell.
// Strings inside context and metadata may contain it (docs/api-decisions.md).
const nulMessage = "must not contain U+0000 (NUL)"

// utf16Len counts the UTF-16 code units of s.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// member is one member of a JSON object in RFC 8785 form: its key decoded, its value
// as its canonical text.
type member struct {
	k string
	v json.RawMessage
}

// members are the members of a JSON object, in canonical (key) order. An event has a
// handful: a scan is cheaper than building and hashing into a map.
type members []member

// get returns the value of member k.
func (ms members) get(k string) (json.RawMessage, bool) {
	for _, m := range ms {
		if m.k == k {
			return m.v, true
		}
	}
	return nil, false
}

// set sets member k to v, in its place in key order (payload member names are ASCII,
// where UTF-16 order is byte order).
func (ms *members) set(k string, v json.RawMessage) {
	i, found := slices.BinarySearchFunc(*ms, k, func(m member, k string) int { return strings.Compare(m.k, k) })
	if found {
		(*ms)[i].v = v
		return
	}
	*ms = slices.Insert(*ms, i, member{k, v})
}

// without removes, in place, the members for which drop is true.
func (ms members) without(drop func(member) bool) members {
	return slices.DeleteFunc(ms, drop)
}

// canonObject splits a JSON object in RFC 8785 form (as tlog.CanonicalizeLimited
// returns it: no whitespace, valid) into its members, keys decoded and values as their
// canonical text, in their order (the canonical one), with room for extra more
// members. It returns false when canon is not an object.
func canonObject(canon []byte, extra int) (members, bool) {
	return appendObject(make(members, 0, 5+extra), canon)
}

// appendObject is canonObject appending the members to ms (a caller's array, say).
func appendObject(ms members, canon []byte) (members, bool) {
	if len(canon) < 2 || canon[0] != '{' {
		return nil, false
	}
	if canon[1] == '}' {
		return ms, len(canon) == 2
	}
	for i := 1; ; {
		kEnd := skipCanonValue(canon, i)
		key, ok := canonKey(canon[i:kEnd])
		if !ok || kEnd >= len(canon) || canon[kEnd] != ':' {
			return nil, false
		}
		vEnd := skipCanonValue(canon, kEnd+1)
		if vEnd >= len(canon) {
			return nil, false
		}
		ms = append(ms, member{key, canon[kEnd+1 : vEnd]})
		if canon[vEnd] == '}' {
			if vEnd != len(canon)-1 {
				return nil, false
			}
			return ms, true
		}
		if canon[vEnd] != ',' {
			return nil, false
		}
		i = vEnd + 1
	}
}

// canonElements splits a JSON array in RFC 8785 form into its elements' canonical
// text. It returns false when canon is not an array.
func canonElements(canon []byte) ([][]byte, bool) {
	if len(canon) < 2 || canon[0] != '[' {
		return nil, false
	}
	if canon[1] == ']' {
		return [][]byte{}, len(canon) == 2
	}
	var out [][]byte
	for i := 1; ; {
		end := skipCanonValue(canon, i)
		if end >= len(canon) {
			return nil, false
		}
		out = append(out, canon[i:end])
		if canon[end] == ']' {
			return out, end == len(canon)-1
		}
		if canon[end] != ',' {
			return nil, false
		}
		i = end + 1
	}
}

// skipCanonValue returns the end of the canonical JSON value starting at canon[i].
func skipCanonValue(canon []byte, i int) int {
	depth := 0
	for ; i < len(canon); i++ {
		switch canon[i] {
		case '"':
			i = stringEnd(canon, i)
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
		case ',', ':':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// stringEnd returns the index of the quote that closes the JSON string opening at
// canon[open], or len(canon). It jumps from quote to quote: a quote is the closing
// one when an even number of backslashes precede it.
func stringEnd(canon []byte, open int) int {
	for i := open + 1; ; {
		j := bytes.IndexByte(canon[i:], '"')
		if j < 0 {
			return len(canon)
		}
		end := i + j
		k := end
		for k > open+1 && canon[k-1] == '\\' {
			k--
		}
		if (end-k)%2 == 0 {
			return end
		}
		i = end + 1
	}
}

// knownKeys are the member names of an event, of its entities and of a batch body,
// each mapped to itself: canonKey returns such a key without allocating it.
var knownKeys = func() map[string]string {
	m := map[string]string{"type": "type", "id": "id", "display": "display", "events": "events"}
	for _, k := range slices.Concat(tlog.PayloadMembers, transport) {
		m[k] = k
	}
	return m
}()

// canonKey is canonString for a member name.
func canonKey(v []byte) (string, bool) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		if k, ok := knownKeys[string(v[1:len(v)-1])]; ok {
			return k, true
		}
	}
	return canonString(v)
}

// canonString decodes a canonical JSON string literal.
func canonString(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	inner := v[1 : len(v)-1]
	if !slices.Contains(inner, '\\') {
		return string(inner), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// parseEvent validates an ingest body that is already in RFC 8785 form. It returns the
// field errors, one per field, when the body does not match the schema.
func parseEvent(canonical []byte) (*eventInput, []FieldError) {
	// raw becomes the payload members once the others are out: room for the
	// server's enrichment (prepareWith).
	raw, ok := canonObject(canonical, 3)
	if !ok {
		return nil, []FieldError{{Field: "", Message: "body must be a JSON object"}}
	}
	// payload keeps the members' order: the canonical one, which the body has.
	if byKey := func(a, b member) int { return strings.Compare(a.k, b.k) }; !slices.IsSortedFunc(raw, byKey) {
		slices.SortFunc(raw, byKey)
	}
	in := &eventInput{}
	var errs []FieldError
	bad := func(field, format string, args ...any) {
		// One entry per field: a member already reported (say, a null required
		// member, which is then also missing) keeps its first message.
		if slices.ContainsFunc(errs, func(e FieldError) bool { return e.Field == field }) {
			return
		}
		errs = append(errs, FieldError{Field: field, Message: fmt.Sprintf(format, args...)})
	}
	str := func(field string, maxLen int, required bool) (string, bool) {
		v, ok := raw.get(field)
		if !ok {
			if required {
				bad(field, "is required")
			}
			return "", false
		}
		s, ok := canonString(v)
		if !ok {
			bad(field, "must be a string")
			return "", false
		}
		if strings.ContainsRune(s, 0) {
			bad(field, nulMessage)
			return "", false
		}
		if n := utf16Len(s); n > maxLen || (required && n == 0) {
			if required {
				bad(field, "must be 1 to %d characters", maxLen)
			} else {
				bad(field, "must be at most %d characters", maxLen)
			}
			return "", false
		}
		return s, true
	}
	// ent validates entity member field; ok is false when it is absent or invalid.
	ent := func(field string, required bool) (e entity, ok bool) {
		v, ok := raw.get(field)
		if !ok {
			if required {
				bad(field, "is required")
			}
			return e, false
		}
		var room [4]member // an entity has at most three members
		m, isObject := appendObject(room[:0], v)
		if !isObject {
			bad(field, "must be an object {type, id, display?}")
			return e, false
		}
		okAll := true
		for _, kv := range m {
			k, mv := kv.k, kv.v
			s, ok := canonString(mv)
			if !ok {
				bad(field+"."+k, "must be a string")
				okAll = false
				continue
			}
			if strings.ContainsRune(s, 0) {
				bad(field+"."+k, nulMessage)
				okAll = false
				continue
			}
			switch k {
			case "type":
				e.Type = s
				if n := utf16Len(s); n < 1 || n > maxEntityType {
					bad(field+".type", "must be 1 to %d characters", maxEntityType)
					okAll = false
				}
			case "id":
				e.ID = s
				if n := utf16Len(s); n < 1 || n > maxEntityID {
					bad(field+".id", "must be 1 to %d characters", maxEntityID)
					okAll = false
				}
			case "display":
				e.Display = s
				if utf16Len(s) > maxDisplay {
					bad(field+".display", "must be at most %d characters", maxDisplay)
					okAll = false
				}
			default:
				bad(field+"."+k, "is not a member of an entity (type, id, display)")
				okAll = false
			}
		}
		for _, k := range []string{"type", "id"} {
			if _, ok := m.get(k); !ok {
				bad(field+"."+k, "is required")
				okAll = false
			}
		}
		return e, okAll
	}
	enum := func(field string, values []string) string {
		s, ok := str(field, 64, false)
		if ok && !slices.Contains(values, s) {
			bad(field, "must be one of %v", values)
			return ""
		}
		return s
	}

	raw = raw.without(func(m member) bool {
		switch {
		case string(m.v) == "null":
			bad(m.k, "must not be null; omit it instead")
			return true
		case !tlog.IsPayloadMember(m.k) && !slices.Contains(transport, m.k):
			bad(m.k, "is not an event member")
			return true
		}
		return false
	})
	in.action, _ = str("action", maxAction, true)
	if a, ok := ent("actor", true); ok {
		in.actor = a
	}
	in.status = enum("status", statuses)
	if t, ok := ent("target", false); ok {
		in.target = &t
	}
	enum("risk", risks)
	for _, f := range []string{"context", "metadata"} {
		if v, ok := raw.get(f); ok && v[0] != '{' {
			bad(f, "must be an object")
		}
	}
	for _, f := range attribution {
		str(f, maxAttribution, false)
	}
	for _, f := range []string{"inputHash", "outputHash"} {
		str(f, maxHashField, false)
	}
	if id, ok := str("id", tlog.MaxEventIDLen, false); ok {
		if !tlog.ValidEventID(id) {
			bad("id", "must be evt_ followed by 1 to %d letters, digits, '_' or '-'", tlog.MaxEventIDLen-4)
		}
		in.id = id
	}
	if n, ok := str("nonce", 64, false); ok {
		if _, err := tlog.ParseNonce(n); err != nil {
			bad("nonce", "must be 32 bytes of lowercase hex")
		}
		in.nonce = n
	}
	in.signingKeyID, _ = str("signingKeyId", maxSigningKey, false)
	if sig, ok := str("signature", 128, false); ok {
		in.signature = sig
	}
	// Every member left in raw is a payload or a transport member (the loop above
	// removed the others).
	in.members = raw.without(func(m member) bool { return slices.Contains(transport, m.k) })
	if len(errs) > 0 {
		slices.SortFunc(errs, func(a, b FieldError) int {
			if a.Field < b.Field {
				return -1
			}
			if a.Field > b.Field {
				return 1
			}
			return 0
		})
		return nil, errs
	}
	return in, nil
}

// payload returns the canonical payload: the payload members, in JCS order (the
// order they are kept in).
func (in *eventInput) payload() []byte {
	return in.appendPayload(make([]byte, 0, in.payloadLen()))
}

// payloadLen is the length of in's payload.
func (in *eventInput) payloadLen() int {
	size := 2
	for _, m := range in.members {
		size += len(m.k) + 4 + len(m.v)
	}
	return size
}

// appendPayload appends in's payload to out.
func (in *eventInput) appendPayload(out []byte) []byte {
	out = append(out, '{')
	for i, m := range in.members {
		if i > 0 {
			out = append(out, ',')
		}
		// Payload member names are ASCII letters: their JCS form is the name quoted.
		out = append(out, '"')
		out = append(out, m.k...)
		out = append(out, '"', ':')
		out = append(out, m.v...)
	}
	return append(out, '}')
}

// setString sets a payload string member (server enrichment of unsigned events).
func (in *eventInput) setString(member, value string) {
	in.members.set(member, enrichValue(value))
}

// enrichValue is the JCS form of a server-added payload string: invalid UTF-8
// replaced, cut to maxAttribution UTF-16 code units.
func enrichValue(value string) json.RawMessage {
	if !utf8.ValidString(value) {
		value = string([]rune(value)) // replaces invalid bytes with U+FFFD
	}
	// Cut to the longest prefix of at most maxAttribution UTF-16 code units, in one
	// pass (never splitting a character).
	units := 0
	for i, r := range value {
		units += utf16.RuneLen(r)
		if units > maxAttribution {
			value = value[:i]
			break
		}
	}
	return tlog.AppendJCSString(nil, value)
}

// enrichment holds the server-added payload members of a request's unsigned events,
// in JCS form, computed at the first event that needs them: a batch's events share
// them.
type enrichment struct {
	r       *http.Request
	ip, ua  json.RawMessage // nil: none
	fetched bool

	// block is the size of the blocks payload carves the request's payloads from (0:
	// one allocation per payload); slab is the current one.
	block int
	slab  []byte
}

// payload returns in.payload(), carved from the request's current block when it
// has one: a batch's thousand payloads take a few allocations, not one each (the
// payloads all live until the batch is sealed).
func (en *enrichment) payload(in *eventInput) []byte {
	n := in.payloadLen()
	if cap(en.slab)-len(en.slab) < n {
		if n >= en.block {
			return in.appendPayload(make([]byte, 0, n))
		}
		en.slab = make([]byte, 0, en.block)
	}
	start := len(en.slab)
	en.slab = in.appendPayload(en.slab)
	return en.slab[start:len(en.slab):len(en.slab)]
}

func (en *enrichment) values(s *Server) (ip, ua json.RawMessage) {
	if !en.fetched {
		en.fetched = true
		if v := s.clientIP(en.r); v != "" {
			en.ip = enrichValue(v)
		}
		if v := en.r.UserAgent(); v != "" {
			en.ua = enrichValue(v)
		}
	}
	return en.ip, en.ua
}

// successJSON is the status of an unsigned event that gives none.
var successJSON = json.RawMessage(`"success"`)
