package httpapi

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sealtrail/sealtrail/catalog"
)

// storableText reports whether s can be stored in and compared against PostgreSQL
// text: valid UTF-8 without U+0000. Everything else the catalog accepts (noncharacters,
// U+FFFF, supplementary planes) PostgreSQL holds too; lone surrogates are invalid UTF-8.
func storableText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// withStorableURL answers 400 to a request whose path or query parameters (names or
// values, after unescaping) are not storableText, before any handler runs: they would
// reach the catalog as filters or ids, where PostgreSQL refuses them with an error the
// API would report as a 500, and SQLite would not, so one rule holds for both.
func withStorableURL(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !storableText(r.URL.Path) {
			writeError(w, http.StatusBadRequest, "The path must not contain U+0000 (NUL) or invalid UTF-8")
			return
		}
		if r.URL.RawQuery == "" {
			next.ServeHTTP(w, r) // nothing to parse (every ingest)
			return
		}
		for name, values := range r.URL.Query() {
			ok := storableText(name)
			for _, v := range values {
				ok = ok && storableText(v)
			}
			if !ok {
				writeError(w, http.StatusBadRequest, fmt.Sprintf("Query parameter %q must not contain U+0000 (NUL) or invalid UTF-8", name))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// params reads query parameters, collecting the first error.
type params struct {
	q   url.Values
	err error
}

func newParams(r *http.Request) *params { return &params{q: r.URL.Query()} }

func (p *params) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf(format, args...)
	}
}

func (p *params) str(name string, maxLen int) string {
	v := p.q.Get(name)
	if len(v) > maxLen {
		p.fail("%s must be at most %d bytes", name, maxLen)
		return ""
	}
	return v
}

// uint reads a non-negative integer parameter; ok is false when it is absent.
func (p *params) uint(name string) (v uint64, ok bool) {
	raw, present := p.q[name]
	if !present {
		return 0, false
	}
	n, err := strconv.ParseUint(raw[0], 10, 64)
	if err != nil || n > 1<<53 {
		p.fail("%s must be a non-negative integer", name)
		return 0, false
	}
	return n, true
}

// limit reads a page size: default def, at most max (larger values are capped).
func (p *params) limit(def, max int) int {
	v, ok := p.uint("limit")
	if !ok {
		return def
	}
	if v == 0 {
		p.fail("limit must be at least 1")
		return def
	}
	return int(min(v, uint64(max)))
}

// time reads an RFC 3339 time.
func (p *params) time(name string) time.Time {
	raw := p.q.Get(name)
	if raw == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		p.fail("%s must be an RFC 3339 time such as 2026-11-21T10:00:00.000Z", name)
		return time.Time{}
	}
	return t
}

// stream reads the stream parameter: events (default) or project-audit.
func (p *params) stream() catalog.Stream {
	s, err := streamParam(p.q.Get("stream"))
	if err != nil {
		p.fail("%v", err)
	}
	return s
}

func apiStreamName(s catalog.Stream) string { return string(s) } // "events" or "project_audit"

// A cursor is an opaque token: the last sequence of the previous page, bound to the
// project so a cursor of one project is refused by another.
func encodeCursor(projectID string, seq uint64) string {
	h := sha256.Sum256([]byte(projectID))
	b := binary.BigEndian.AppendUint64([]byte{1}, seq)
	b = append(b, h[:8]...)
	return base64.RawURLEncoding.EncodeToString(b)
}

var errCursor = errors.New("cursor is not a nextCursor of this project's /events")

func decodeCursor(projectID, token string) (uint64, error) {
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(b) != 17 || b[0] != 1 {
		return 0, errCursor
	}
	h := sha256.Sum256([]byte(projectID))
	if string(b[9:]) != string(h[:8]) {
		return 0, errCursor
	}
	return binary.BigEndian.Uint64(b[1:9]), nil
}
