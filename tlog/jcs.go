package tlog

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Errors of canonicalization. A *CanonError wraps exactly one of them, so callers test
// with errors.Is. Every one means the input cannot be represented exactly by RFC 8785
// and must be rejected, never repaired.
var (
	ErrSyntax        = errors.New("invalid JSON")
	ErrDuplicateKey  = errors.New("duplicate object key")
	ErrInvalidUTF8   = errors.New("invalid UTF-8")
	ErrLoneSurrogate = errors.New("lone UTF-16 surrogate")
	ErrIntegerRange  = errors.New("integer beyond 2^53")
	ErrNonFinite     = errors.New("non-finite number")
	ErrLimit         = errors.New("limit exceeded")
)

// CanonError reports why input could not be canonicalized and where.
type CanonError struct {
	Kind   error // one of the Err* sentinels above
	Offset int   // byte offset in the input
	Detail string
}

func (e *CanonError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("jcs: %v at offset %d", e.Kind, e.Offset)
	}
	return fmt.Sprintf("jcs: %v at offset %d: %s", e.Kind, e.Offset, e.Detail)
}

func (e *CanonError) Unwrap() error { return e.Kind }

// Limits bound the shape of the JSON text CanonicalizeLimited accepts; exceeding one is
// an ErrLimit. Canonicalize costs time linear in its input (plus the sort of each
// object's members) whatever the limits; they keep hostile input small.
type Limits struct {
	// MaxDepth bounds nesting: no value may lie more than MaxDepth levels of objects
	// and arrays below the top-level value. Zero, or more than MaxDepth, means MaxDepth.
	MaxDepth int
	// MaxMembers bounds the members of any one object. Zero means no bound.
	MaxMembers int
}

// MaxDepth is the nesting Canonicalize accepts: deep enough for anything the service
// ever stored, shallow enough that hostile input cannot exhaust the stack. Ingest
// applies tighter limits of its own (httpapi, docs/api-decisions.md).
const MaxDepth = 256

// maxSafeInteger is 2^53, the largest integer magnitude an IEEE 754 double holds exactly
// together with all smaller ones.
const maxSafeInteger = 1 << 53

// Canonicalize returns the RFC 8785 (JCS) form of the JSON text in. It rejects, with a
// *CanonError, anything JCS cannot represent exactly: duplicate keys, invalid UTF-8,
// lone surrogates, numbers out of the safe integer range (integer literals beyond ±2^53,
// and any literal whose exact value lies beyond ±2^53 and below 1e21: see
// numberInRange), numbers that overflow to infinity, nesting deeper than MaxDepth, and
// any syntax error or trailing data.
func Canonicalize(in []byte) ([]byte, error) {
	return CanonicalizeLimited(in, Limits{})
}

// CanonicalizeLimited is Canonicalize with bounds on nesting and on the members of an
// object; input beyond them is rejected with a *CanonError wrapping ErrLimit.
func CanonicalizeLimited(in []byte, lim Limits) ([]byte, error) {
	if lim.MaxDepth <= 0 || lim.MaxDepth > MaxDepth {
		lim.MaxDepth = MaxDepth
	}
	p := &canonParser{in: in, lim: lim}
	p.skipSpace()
	// Room for an unsorted top-level object assembled after its members (object);
	// a large input is mostly a batch whose one top-level member is in order, and
	// needs only about its own size.
	size := 2*len(in) + 16
	if len(in) > 64<<10 {
		size = len(in) + len(in)/4
	}
	out, err := p.value(make([]byte, 0, size), 0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(in) {
		return nil, p.errorf(ErrSyntax, "trailing data")
	}
	return out, nil
}

type canonParser struct {
	in  []byte
	pos int
	lim Limits
}

func (p *canonParser) errorf(kind error, format string, args ...any) error {
	return &CanonError{Kind: kind, Offset: p.pos, Detail: fmt.Sprintf(format, args...)}
}

func (p *canonParser) skipSpace() {
	for p.pos < len(p.in) {
		switch p.in[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *canonParser) value(out []byte, depth int) ([]byte, error) {
	if depth > p.lim.MaxDepth {
		return nil, p.errorf(ErrLimit, "nesting deeper than %d", p.lim.MaxDepth)
	}
	if p.pos >= len(p.in) {
		return nil, p.errorf(ErrSyntax, "unexpected end of input")
	}
	switch c := p.in[p.pos]; {
	case c == '{':
		return p.object(out, depth)
	case c == '[':
		return p.array(out, depth)
	case c == '"':
		if raw, ok, err := p.plainString(); err != nil {
			return nil, err
		} else if ok {
			// No escapes: the raw text is already the JCS form (no '"', '\\' or
			// control character in it, and valid UTF-8).
			out = append(out, '"')
			out = append(out, raw...)
			return append(out, '"'), nil
		}
		s, err := p.string()
		if err != nil {
			return nil, err
		}
		return appendString(out, s), nil
	case c == 't':
		return p.literal(out, "true")
	case c == 'f':
		return p.literal(out, "false")
	case c == 'n':
		return p.literal(out, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number(out)
	default:
		return nil, p.errorf(ErrSyntax, "unexpected character %q", c)
	}
}

func (p *canonParser) literal(out []byte, lit string) ([]byte, error) {
	if !strings.HasPrefix(string(p.in[p.pos:min(len(p.in), p.pos+len(lit))]), lit) {
		return nil, p.errorf(ErrSyntax, "invalid literal")
	}
	p.pos += len(lit)
	return append(out, lit...), nil
}

// shortEscapes maps the character after a backslash to the byte it stands for.
var shortEscapes = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

type member struct {
	key        string
	start, end int // the canonical member, `"key":value`, in the output buffer
	keyPos     int // offset of the key in the input
}

// compareMembers orders members by key in UTF-16 order and equal keys by position, so
// that duplicates end up adjacent, in input order.
func compareMembers(a, b member) int {
	if c := compareUTF16(a.key, b.key); c != 0 {
		return c
	}
	return a.keyPos - b.keyPos
}

// sortMembers sorts the members of an object into JCS order with cmp (compareMembers)
// and returns the index of the first repeated key in input order, or -1. Duplicates are
// found among sorted neighbours: n-1 comparisons on top of the sort JCS needs anyway,
// where checking each key against all before it took n²/2.
func sortMembers(members []member, cmp func(a, b member) int) int {
	slices.SortFunc(members, cmp)
	dup := -1
	for i := 1; i < len(members); i++ {
		if members[i].key == members[i-1].key && (dup < 0 || members[i].keyPos < members[dup].keyPos) {
			dup = i
		}
	}
	return dup
}

// object parses an object and appends its JCS form to out. Each member is appended
// in its canonical form (`"key":value`) in input order; when the keys were already in
// order (as clients mostly send them) that is the object, and nothing moves. Otherwise
// the sorted object is assembled after the members and moved down to where the object
// starts.
func (p *canonParser) object(out []byte, depth int) ([]byte, error) {
	p.pos++ // '{'
	var small [16]member
	members := small[:0]
	base := len(out)
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == '}' {
		p.pos++
		return append(out, '{', '}'), nil
	}
	out = append(out, '{')
	sorted := true
	for {
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != '"' {
			return nil, p.errorf(ErrSyntax, "expected object key")
		}
		keyPos := p.pos
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.in) || p.in[p.pos] != ':' {
			return nil, p.errorf(ErrSyntax, "expected ':' after object key")
		}
		p.pos++
		p.skipSpace()
		if p.lim.MaxMembers > 0 && len(members) == p.lim.MaxMembers {
			return nil, &CanonError{Kind: ErrLimit, Offset: keyPos, Detail: fmt.Sprintf("object with more than %d members", p.lim.MaxMembers)}
		}
		if n := len(members); n > 0 {
			out = append(out, ',')
			sorted = sorted && compareUTF16(members[n-1].key, key) < 0
		}
		start := len(out)
		out = append(appendString(out, key), ':')
		if out, err = p.value(out, depth+1); err != nil {
			return nil, err
		}
		members = append(members, member{key, start, len(out), keyPos})
		p.skipSpace()
		if p.pos >= len(p.in) {
			return nil, p.errorf(ErrSyntax, "unterminated object")
		}
		if p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.in[p.pos] == '}' {
			p.pos++
			break
		}
		return nil, p.errorf(ErrSyntax, "expected ',' or '}' in object")
	}
	out = append(out, '}')
	if sorted {
		return out, nil // strictly increasing keys: in order, and no duplicate
	}
	if dup := sortMembers(members, compareMembers); dup >= 0 {
		m := members[dup]
		return nil, &CanonError{Kind: ErrDuplicateKey, Offset: m.keyPos, Detail: strconv.Quote(m.key)}
	}
	tail := len(out)
	out = append(out, '{')
	for i, m := range members {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, out[m.start:m.end]...)
	}
	out = append(out, '}')
	n := copy(out[base:], out[tail:])
	return out[:base+n], nil
}

func (p *canonParser) array(out []byte, depth int) ([]byte, error) {
	p.pos++ // '['
	out = append(out, '[')
	p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == ']' {
		p.pos++
		return append(out, ']'), nil
	}
	for first := true; ; first = false {
		if !first {
			out = append(out, ',')
		}
		p.skipSpace()
		var err error
		if out, err = p.value(out, depth+1); err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.in) {
			return nil, p.errorf(ErrSyntax, "unterminated array")
		}
		if p.in[p.pos] == ',' {
			p.pos++
			continue
		}
		if p.in[p.pos] == ']' {
			p.pos++
			return append(out, ']'), nil
		}
		return nil, p.errorf(ErrSyntax, "expected ',' or ']' in array")
	}
}

// plainString scans the JSON string at p.pos. When it holds no escape it returns its
// raw text (valid UTF-8, no control character), true, and moves past it; when it holds
// one it returns false and leaves p.pos for string.
func (p *canonParser) plainString() ([]byte, bool, error) {
	start := p.pos + 1
	for i := start; i < len(p.in); {
		if i += plainASCII(p.in[i:]); i >= len(p.in) {
			break
		}
		c := p.in[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return p.in[start:i], true, nil
		case c == '\\':
			return nil, false, nil
		case c < 0x20:
			p.pos = i
			return nil, false, p.errorf(ErrSyntax, "control character in string")
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(p.in[i:])
			if r == utf8.RuneError && size <= 1 {
				p.pos = i
				return nil, false, p.errorf(ErrInvalidUTF8, "")
			}
			i += size
		}
	}
	p.pos = len(p.in)
	return nil, false, p.errorf(ErrSyntax, "unterminated string")
}

// key parses an object key at p.pos.
func (p *canonParser) key() (string, error) {
	if raw, ok, err := p.plainString(); err != nil || ok {
		return string(raw), err
	}
	return p.string()
}

// string parses a JSON string at p.pos and returns its value as valid UTF-8.
func (p *canonParser) string() (string, error) {
	p.pos++ // opening quote
	var b strings.Builder
	for {
		if p.pos >= len(p.in) {
			return "", p.errorf(ErrSyntax, "unterminated string")
		}
		c := p.in[p.pos]
		switch {
		case c == '"':
			p.pos++
			return b.String(), nil
		case c == '\\':
			if err := p.escape(&b); err != nil {
				return "", err
			}
		case c < 0x20:
			return "", p.errorf(ErrSyntax, "control character in string")
		case c < utf8.RuneSelf:
			b.WriteByte(c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.in[p.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", p.errorf(ErrInvalidUTF8, "")
			}
			b.Write(p.in[p.pos : p.pos+size])
			p.pos += size
		}
	}
}

func (p *canonParser) escape(b *strings.Builder) error {
	if p.pos+1 >= len(p.in) {
		return p.errorf(ErrSyntax, "unterminated escape")
	}
	c := p.in[p.pos+1]
	if r, ok := shortEscapes[c]; ok {
		b.WriteByte(r)
		p.pos += 2
		return nil
	}
	if c != 'u' {
		return p.errorf(ErrSyntax, "invalid escape \\%c", c)
	}
	r1, err := p.hex4(p.pos + 2)
	if err != nil {
		return err
	}
	start := p.pos
	p.pos += 6
	switch {
	case utf16.IsSurrogate(r1) && r1 < 0xDC00:
		// A high surrogate must be followed at once by an escaped low surrogate.
		if p.pos+1 < len(p.in) && p.in[p.pos] == '\\' && p.in[p.pos+1] == 'u' {
			r2, err := p.hex4(p.pos + 2)
			if err != nil {
				return err
			}
			if r2 >= 0xDC00 && r2 <= 0xDFFF {
				b.WriteRune(utf16.DecodeRune(r1, r2))
				p.pos += 6
				return nil
			}
		}
		return &CanonError{Kind: ErrLoneSurrogate, Offset: start, Detail: fmt.Sprintf("\\u%04x", r1)}
	case utf16.IsSurrogate(r1):
		return &CanonError{Kind: ErrLoneSurrogate, Offset: start, Detail: fmt.Sprintf("\\u%04x", r1)}
	default:
		b.WriteRune(r1)
		return nil
	}
}

func (p *canonParser) hex4(at int) (rune, error) {
	if at+4 > len(p.in) {
		return 0, p.errorf(ErrSyntax, "short \\u escape")
	}
	v, err := strconv.ParseUint(string(p.in[at:at+4]), 16, 32)
	if err != nil {
		return 0, p.errorf(ErrSyntax, "invalid \\u escape")
	}
	return rune(v), nil
}

// number parses a JSON number and appends its ECMAScript (RFC 8785 section 3.2.2.3) form.
func (p *canonParser) number(out []byte) ([]byte, error) {
	start := p.pos
	integer := true
	if p.in[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(p.in) && p.in[p.pos] >= '0' && p.in[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	intStart := p.pos
	if n := digits(); n == 0 {
		return nil, p.errorf(ErrSyntax, "invalid number")
	} else if n > 1 && p.in[intStart] == '0' {
		return nil, p.errorf(ErrSyntax, "leading zero in number")
	}
	if p.pos < len(p.in) && p.in[p.pos] == '.' {
		integer = false
		p.pos++
		if digits() == 0 {
			return nil, p.errorf(ErrSyntax, "invalid number fraction")
		}
	}
	if p.pos < len(p.in) && (p.in[p.pos] == 'e' || p.in[p.pos] == 'E') {
		integer = false
		p.pos++
		if p.pos < len(p.in) && (p.in[p.pos] == '+' || p.in[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errorf(ErrSyntax, "invalid number exponent")
		}
	}
	lit := string(p.in[start:p.pos])
	f, err := strconv.ParseFloat(shortLiteral(lit), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, &CanonError{Kind: ErrSyntax, Offset: start, Detail: lit}
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, &CanonError{Kind: ErrNonFinite, Offset: start, Detail: lit}
	}
	if !numberInRange(lit, integer, math.Abs(f)) {
		return nil, &CanonError{Kind: ErrIntegerRange, Offset: start, Detail: lit}
	}
	return AppendNumber(out, f), nil
}

// longLiteral is the length from which number reduces a literal (shortLiteral) before
// strconv.ParseFloat reads it: ParseFloat keeps at most 800 digits and then misplaces
// the decimal point of a literal with more integer digits than that (Go 1.26:
// "1" followed by 800 zeros and "e-800" reads as 0.1), where ECMAScript, and so
// RFC 8785 and the TypeScript client, read 1.
const longLiteral = 700

// shortLiteral returns lit (a valid JSON number) with the same float64 value and at
// most 770 digits: its significant digits D and exponent E (value ±D × 10^E), D cut to
// 768 digits plus a nonzero sticky digit when it was longer (no float64 lies between
// two numbers with the same first 768 significant digits and a nonzero tail, so the
// rounding is unchanged). Shorter literals are returned as they are.
func shortLiteral(lit string) string {
	if len(lit) < longLiteral {
		return lit
	}
	neg := lit[0] == '-'
	body := strings.TrimPrefix(lit, "-")
	mant, expPart, _ := strings.Cut(strings.ToLower(body), "e")
	intPart, fracPart, _ := strings.Cut(mant, ".")
	exp := 0
	if expPart != "" {
		sign := 1
		switch expPart[0] {
		case '-':
			sign, expPart = -1, expPart[1:]
		case '+':
			expPart = expPart[1:]
		}
		for i := 0; i < len(expPart) && exp < 100_000_000; i++ { // beyond it: 0 or ±Inf alike
			exp = exp*10 + int(expPart[i]-'0')
		}
		exp *= sign
	}
	digits := strings.TrimLeft(intPart+fracPart, "0")
	exp -= len(fracPart)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	digits = trimmed
	if digits == "" {
		if neg {
			return "-0"
		}
		return "0"
	}
	const keep = 768
	if len(digits) > keep {
		exp += len(digits) - keep - 1
		digits = digits[:keep] + "1" // the tail is not all zeros: trailing zeros were trimmed
	}
	out := digits + "e" + strconv.Itoa(exp)
	if neg {
		out = "-" + out
	}
	return out
}

// numberInRange applies the range rule of docs/formats.md to a literal whose float64
// has magnitude abs: an integer literal beyond ±2^53 is out of range, and so is any
// literal whose exact decimal value has a magnitude above 2^53 and below 1e21, however
// it is spelled (ECMAScript prints such values as plain digits, which would read back
// as an out-of-range integer or as a silently different one). The float decides every
// case but the two where it lands exactly on a bound; there the literal's digits do.
func numberInRange(lit string, integer bool, abs float64) bool {
	switch {
	case integer:
		return safeInteger(lit)
	case abs > maxSafeInteger && abs < 1e21:
		return false
	case abs == maxSafeInteger: // 2^53 itself, or a literal a little above or below it
		return compareDecimal(lit, "9007199254740992", 16) <= 0
	case abs == 1e21: // 1e21 itself, or a literal a little above or below it
		return compareDecimal(lit, "1", 22) >= 0
	}
	return true
}

// compareDecimal compares the magnitude of the JSON number literal lit (nonzero) with
// 0.digits × 10^point, where digits has no leading or trailing zeros, and returns its
// sign. It reads the literal's digits, so it is exact where the float64 rounds; it runs
// only for the rare literals whose float64 is exactly a bound.
func compareDecimal(lit, digits string, point int) int {
	mant, exp, _ := strings.Cut(strings.ToLower(strings.TrimPrefix(lit, "-")), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	sig := strings.TrimLeft(intPart+frac, "0")
	litPoint := len(intPart) - (len(intPart) + len(frac) - len(sig))
	sig = strings.TrimRight(sig, "0")
	if exp != "" {
		e, err := strconv.Atoi(exp)
		if err != nil || e > 1<<30 || e < -(1<<30) {
			// Out of reach for a literal whose float is a bound: its digits would have
			// to cancel an exponent beyond any input size. Compare by the sign alone.
			if strings.HasPrefix(exp, "-") {
				return -1
			}
			return 1
		}
		litPoint += e
	}
	switch {
	case sig == "":
		return -1
	case litPoint != point:
		return litPoint - point
	}
	return strings.Compare(sig, digits)
}

// safeInteger reports whether an integer literal lies within ±2^53. It reads the digits
// rather than the float, which rounds 2^53+1 down to 2^53.
func safeInteger(lit string) bool {
	v, err := strconv.ParseUint(strings.TrimPrefix(lit, "-"), 10, 64)
	return err == nil && v <= maxSafeInteger
}

// AppendNumber appends the ECMAScript Number.prototype.toString form of a finite f, as
// RFC 8785 requires.
func AppendNumber(out []byte, f float64) []byte {
	if f == 0 {
		return append(out, '0') // also -0
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.AppendFloat(out, f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d[.ddd]e±XX
	mant, exp, _ := strings.Cut(s, "e")
	out = append(out, mant...)
	out = append(out, 'e')
	if exp[0] == '-' {
		out = append(out, '-')
	} else {
		out = append(out, '+')
	}
	return append(out, strings.TrimLeft(exp[1:], "0")...)
}

// AppendJCSString appends s, valid UTF-8, as an RFC 8785 string literal.
func AppendJCSString(out []byte, s string) []byte { return appendString(out, s) }

// appendString appends s (valid UTF-8) as a JCS string literal: only '"', '\\' and
// control characters are escaped, with the short forms where JSON has them.
func appendString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	// The common case, nothing to escape, is one copy.
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] != '"' && s[i] != '\\' {
		i++
	}
	out = append(out, s[:i]...)
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c >= 0x20:
			out = append(out, c)
		case c == '\b':
			out = append(out, '\\', 'b')
		case c == '\t':
			out = append(out, '\\', 't')
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\f':
			out = append(out, '\\', 'f')
		case c == '\r':
			out = append(out, '\\', 'r')
		default:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
	}
	return append(out, '"')
}

// compareUTF16 orders two valid UTF-8 keys by their UTF-16 code units, as RFC 8785
// section 3.2.3 requires. UTF-8 byte order equals code point order, which differs from
// UTF-16 order only where a supplementary character (lead byte F0..F4; a surrogate pair
// D800..DBFF DC00..DFFF in UTF-16) meets one in U+E000..U+FFFF (lead byte EE or EF):
// there the supplementary character sorts first. At the first differing byte both
// strings are at the same offset of a character, so those two bytes decide.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	x, y := a[i], b[i]
	switch {
	case x >= 0xF0 && (y == 0xEE || y == 0xEF):
		return -1
	case y >= 0xF0 && (x == 0xEE || x == 0xEF):
		return 1
	}
	return int(x) - int(y)
}
