package tlog

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// TimeLayout is the one timestamp form of Sealtrail: RFC 3339, UTC, milliseconds.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime renders t in TimeLayout, truncated to the millisecond.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// FormatUnixMilli renders the time ms milliseconds after the Unix epoch as FormatTime
// does, without the time package's general formatter; ok is false if its year is
// outside TimeLayout's four digits (0000-9999), which ParseTime rejects.
func FormatUnixMilli(ms int64) (s string, ok bool) {
	const msPerDay = 86_400_000
	days, rem := ms/msPerDay, ms%msPerDay
	if rem < 0 {
		days, rem = days-1, rem+msPerDay
	}
	// The proleptic Gregorian date of days since 1970-01-01 (H. Hinnant's civil_from_days).
	z := days + 719_468
	era := z / 146_097
	if z < 0 {
		era = (z - 146_096) / 146_097
	}
	doe := z - era*146_097
	yoe := (doe - doe/1_460 + doe/36_524 - doe/146_096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	day, month, year := doy-(153*mp+2)/5+1, mp+3, yoe+era*400
	if month > 12 {
		month -= 12
	}
	if month <= 2 {
		year++
	}
	if year < 0 || year > 9999 {
		return "", false
	}
	var b [len(TimeLayout)]byte
	put := func(at int, v int64, n int) {
		for i := at + n - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, year, 4)
	b[4] = '-'
	put(5, month, 2)
	b[7] = '-'
	put(8, day, 2)
	b[10] = 'T'
	put(11, rem/3_600_000, 2)
	b[13] = ':'
	put(14, rem/60_000%60, 2)
	b[16] = ':'
	put(17, rem/1_000%60, 2)
	b[19] = '.'
	put(20, rem%1_000, 3)
	b[23] = 'Z'
	return string(b[:]), true
}

// ParseTime parses a timestamp that must be exactly in TimeLayout: the string
// FormatTime returns for the time it returns. It reads the fixed positions of the
// layout itself (time.Parse and a round trip through Format cost a sealer about 2 % of
// its CPU, once per leaf) and checks the calendar by building the date back.
func ParseTime(s string) (time.Time, error) {
	bad := func() (time.Time, error) {
		return time.Time{}, fmt.Errorf("timestamp %q is not RFC 3339 UTC with milliseconds", s)
	}
	if len(s) != len(TimeLayout) {
		return bad()
	}
	for i := range len(TimeLayout) {
		if c := TimeLayout[i]; c >= '0' && c <= '9' {
			if s[i] < '0' || s[i] > '9' {
				return bad()
			}
		} else if s[i] != c {
			return bad()
		}
	}
	num := func(i, n int) int {
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			v = v*10 + int(c-'0')
		}
		return v
	}
	year, month, day := num(0, 4), num(5, 2), num(8, 2)
	hour, minute, sec, milli := num(11, 2), num(14, 2), num(17, 2), num(20, 3)
	t := time.Date(year, time.Month(month), day, hour, minute, sec, milli*int(time.Millisecond), time.UTC)
	// time.Date normalizes out-of-range fields (month 13, 30 February, 25:00); a
	// valid timestamp comes back unchanged.
	if y, m, d := t.Date(); y != year || int(m) != month || d != day ||
		t.Hour() != hour || t.Minute() != minute || t.Second() != sec {
		return bad()
	}
	return t, nil
}

// Leaf is the content of one log entry. Its encoding (Encode) is the leaf data hashed
// into the tree and stored in entry bundles: the RFC 8785 form of
// {v, projectId, stream, sequence, id, timestamp, payloadHash} plus signingKeyId and
// signature when the event was signed by the customer.
type Leaf struct {
	ProjectID    string
	Stream       string // StreamEvents or StreamProjectAudit
	Sequence     uint64 // 1-based
	ID           string
	Timestamp    string // TimeLayout, the service's receive time
	PayloadHash  Hash
	SigningKeyID string // empty when unsigned
	Signature    string // lowercase hex; empty when unsigned
}

// ErrLeaf wraps every reason a leaf is rejected.
var ErrLeaf = errors.New("invalid leaf")

// Validate checks the leaf's fields against the format.
func (l *Leaf) Validate() error {
	switch {
	case l.ProjectID == "":
		return fmt.Errorf("%w: empty projectId", ErrLeaf)
	case !ValidStream(l.Stream):
		return fmt.Errorf("%w: stream %q", ErrLeaf, l.Stream)
	case l.Sequence < 1 || l.Sequence > maxSafeInteger:
		return fmt.Errorf("%w: sequence %d out of range", ErrLeaf, l.Sequence)
	case !ValidEventID(l.ID):
		return fmt.Errorf("%w: event id %q", ErrLeaf, l.ID)
	case (l.SigningKeyID == "") != (l.Signature == ""):
		return fmt.Errorf("%w: signingKeyId and signature go together", ErrLeaf)
	}
	if _, err := ParseTime(l.Timestamp); err != nil {
		return fmt.Errorf("%w: %w", ErrLeaf, err)
	}
	if l.Signature != "" {
		if _, err := ParseSignature(l.Signature); err != nil {
			return fmt.Errorf("%w: %w", ErrLeaf, err)
		}
	}
	return nil
}

// Encode returns the leaf data: the JCS object, members in RFC 8785 order
// (id, payloadHash, projectId, sequence, signature, signingKeyId, stream, timestamp, v).
// The leaf must be valid (see Validate).
func (l *Leaf) Encode() []byte {
	return l.AppendEncoded(make([]byte, 0, 256+len(l.ProjectID)+len(l.ID)+len(l.SigningKeyID)+len(l.Signature)))
}

// AppendEncoded appends the leaf data (Encode's bytes) to b.
func (l *Leaf) AppendEncoded(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, l.ID)
	b = append(b, `,"payloadHash":"`...)
	b = appendHex(b, l.PayloadHash[:])
	b = append(b, `","projectId":`...)
	b = appendString(b, l.ProjectID)
	b = append(b, `,"sequence":`...)
	b = strconv.AppendUint(b, l.Sequence, 10)
	if l.Signature != "" {
		b = append(b, `,"signature":`...)
		b = appendString(b, l.Signature)
		b = append(b, `,"signingKeyId":`...)
		b = appendString(b, l.SigningKeyID)
	}
	b = append(b, `,"stream":`...)
	b = appendString(b, l.Stream)
	b = append(b, `,"timestamp":`...)
	b = appendString(b, l.Timestamp)
	b = append(b, `,"v":`...)
	b = strconv.AppendInt(b, LeafVersion, 10)
	return append(b, '}')
}

// Hash returns the RFC 6962 leaf hash of the leaf data.
func (l *Leaf) Hash() Hash { return LeafHash(l.Encode()) }

func appendHex(b []byte, src []byte) []byte {
	n := len(b)
	b = slices.Grow(b, 2*len(src))[:n+2*len(src)]
	hex.Encode(b[n:], src)
	return b
}

// leafJSON is the decoding shape of leaf data.
type leafJSON struct {
	V            int    `json:"v"`
	ProjectID    string `json:"projectId"`
	Stream       string `json:"stream"`
	Sequence     uint64 `json:"sequence"`
	ID           string `json:"id"`
	Timestamp    string `json:"timestamp"`
	PayloadHash  string `json:"payloadHash"`
	SigningKeyID string `json:"signingKeyId"`
	Signature    string `json:"signature"`
}

// DecodeLeaf parses leaf data. It accepts only the exact bytes Encode produces for a
// valid leaf: canonical, version 1, no unknown members.
func DecodeLeaf(data []byte) (Leaf, error) {
	// The one-pass check of export_fast.go proves most leaves canonical without
	// building their canonical form, and its members decode without encoding/json;
	// the re-encoding check below holds either way. The rest get Canonicalize's verdict.
	var buf [16]rawMember
	ms, ok := scanCanonicalObject(data, buf[:0])
	if ok {
		if l, ok := decodeLeafMembers(ms); ok && l.Validate() == nil && bytes.Equal(l.Encode(), data) {
			return l, nil
		}
	}
	if !ok {
		canon, err := Canonicalize(data)
		if err != nil {
			return Leaf{}, fmt.Errorf("%w: %w", ErrLeaf, err)
		}
		if !bytes.Equal(canon, data) {
			return Leaf{}, fmt.Errorf("%w: not in canonical form", ErrLeaf)
		}
	}
	var j leafJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return Leaf{}, fmt.Errorf("%w: %w", ErrLeaf, err)
	}
	if j.V != LeafVersion {
		return Leaf{}, fmt.Errorf("%w: version %d", ErrLeaf, j.V)
	}
	ph, err := ParseHash(j.PayloadHash)
	if err != nil {
		return Leaf{}, fmt.Errorf("%w: payloadHash: %w", ErrLeaf, err)
	}
	l := Leaf{ProjectID: j.ProjectID, Stream: j.Stream, Sequence: j.Sequence, ID: j.ID,
		Timestamp: j.Timestamp, PayloadHash: ph, SigningKeyID: j.SigningKeyID, Signature: j.Signature}
	if err := l.Validate(); err != nil {
		return Leaf{}, err
	}
	if !bytes.Equal(l.Encode(), data) {
		return Leaf{}, fmt.Errorf("%w: members do not re-encode to the same bytes", ErrLeaf)
	}
	return l, nil
}

// decodeLeafMembers reads a leaf from the members of a canonical object, when every
// member is a leaf member with a plain value; ok false leaves the decision to DecodeLeaf.
func decodeLeafMembers(ms []rawMember) (l Leaf, ok bool) {
	for i := range ms {
		m := &ms[i]
		var err error
		switch string(m.key) {
		case "v":
			ok = string(m.value) == strconv.Itoa(LeafVersion)
		case "sequence":
			l.Sequence, err = strconv.ParseUint(string(m.value), 10, 64)
			ok = err == nil
		case "projectId":
			l.ProjectID, ok = plainString(m.value)
		case "stream":
			l.Stream, ok = plainString(m.value)
		case "id":
			l.ID, ok = plainString(m.value)
		case "timestamp":
			l.Timestamp, ok = plainString(m.value)
		case "payloadHash":
			var h string
			if h, ok = plainString(m.value); ok {
				l.PayloadHash, err = ParseHash(h)
				ok = err == nil
			}
		case "signingKeyId":
			l.SigningKeyID, ok = plainString(m.value)
		case "signature":
			l.Signature, ok = plainString(m.value)
		default:
			ok = false
		}
		if !ok {
			return Leaf{}, false
		}
	}
	return l, true
}
