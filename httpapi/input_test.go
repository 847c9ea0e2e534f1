package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// wantFieldError requires a 400 whose details name field.
func wantFieldError(t *testing.T, code int, body, field string) {
	t.Helper()
	var eb errorBody
	if err := json.Unmarshal([]byte(body), &eb); err != nil {
		t.Fatalf("status %d, body %s: %v", code, body, err)
	}
	if code != http.StatusBadRequest {
		t.Fatalf("status %d, body %s; want 400 naming %s", code, body, field)
	}
	for _, d := range eb.Details {
		if d.Field == field && strings.Contains(d.Message, "U+0000") {
			return
		}
	}
	t.Fatalf("400 %s does not name %s as containing U+0000", body, field)
}

// TestIngestRejectsNUL sends U+0000 in every string member of the event schema: each
// is a 400 naming the field, on both catalogs (PostgreSQL text cannot hold U+0000 and
// once failed the whole batch's insert with a 500). A valid event sent concurrently,
// into the same batch, is sealed. U+0000 inside context and metadata is accepted: those
// are opaque JSON that only the encrypted payload holds (docs/api-decisions.md).
func TestIngestRejectsNUL(t *testing.T) {
	const nul = `a\u0000b`
	bad := []struct{ field, body string }{
		{"action", `{"action":"` + nul + `","actor":{"type":"u","id":"1"}}`},
		{"actor.id", `{"action":"a","actor":{"type":"u","id":"` + nul + `"}}`},
		{"actor.type", `{"action":"a","actor":{"type":"` + nul + `","id":"1"}}`},
		{"actor.display", `{"action":"a","actor":{"type":"u","id":"1","display":"` + nul + `"}}`},
		{"target.id", `{"action":"a","actor":{"type":"u","id":"1"},"target":{"type":"d","id":"` + nul + `"}}`},
		{"target.type", `{"action":"a","actor":{"type":"u","id":"1"},"target":{"type":"` + nul + `","id":"1"}}`},
		{"requestId", `{"action":"a","actor":{"type":"u","id":"1"},"requestId":"` + nul + `"}`},
		{"userAgent", `{"action":"a","actor":{"type":"u","id":"1"},"userAgent":"` + nul + `"}`},
		{"inputHash", `{"action":"a","actor":{"type":"u","id":"1"},"inputHash":"` + nul + `"}`},
	}
	for _, kind := range catalogKinds {
		t.Run(kind, func(t *testing.T) {
			// A batch seals when it holds every event sent below or after 1 s: had the
			// NUL events got in, they would have shared the valid events' batch.
			s := newStack(t, kind, len(bad)+3, time.Second)
			type result struct {
				code int
				body string
			}
			bodies := []string{
				`{"action":"valid.writer","actor":{"type":"u","id":"2"}}`,
				`{"action":"a","actor":{"type":"u","id":"1"},"metadata":{"k\u0000":"` + nul + `"},"context":{"c":["` + nul + `"]}}`,
				// Noncharacters and the last plane: PostgreSQL text holds them.
				`{"action":"\ufffe\uffff\ufdd0\udbff\udfff","actor":{"type":"\u0001","id":"\u007f"}}`,
			}
			for _, tc := range bad {
				bodies = append(bodies, tc.body)
			}
			results := make([]result, len(bodies))
			var wg sync.WaitGroup
			for i, body := range bodies {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results[i].code, results[i].body = s.do(http.MethodPost, "/api/v1/log", body)
				}()
			}
			wg.Wait()
			if r := results[0]; r.code != http.StatusAccepted {
				t.Errorf("concurrent valid event: %d %s, want 202", r.code, r.body)
			}
			if r := results[1]; r.code != http.StatusAccepted {
				t.Errorf("U+0000 in metadata and context: %d %s, want 202", r.code, r.body)
			}
			if r := results[2]; r.code != http.StatusAccepted {
				t.Errorf("noncharacters and control characters: %d %s, want 202", r.code, r.body)
			}
			for i, tc := range bad {
				wantFieldError(t, results[3+i].code, results[3+i].body, tc.field)
			}
			code, body := s.do(http.MethodGet, "/api/v1/events?limit=500", "")
			var page struct{ Events []struct{ Action string } }
			if code != http.StatusOK || json.Unmarshal([]byte(body), &page) != nil || len(page.Events) != 3 {
				t.Fatalf("/events: %d %.500s, want the 3 valid events", code, body)
			}
		})
	}
}

// TestQueryRejectsNUL sends U+0000 and invalid UTF-8 in query parameters and in the
// path: 400, never the 500 that PostgreSQL's refusal of such text once caused.
func TestQueryRejectsNUL(t *testing.T) {
	for _, kind := range catalogKinds {
		t.Run(kind, func(t *testing.T) {
			s := newStack(t, kind, 0, 0)
			if code, body := s.do(http.MethodPost, "/api/v1/log", `{"action":"a","actor":{"type":"u","id":"1"}}`); code != http.StatusAccepted {
				t.Fatalf("ingest: %d %s", code, body)
			}
			for _, target := range []string{
				"/api/v1/events?action=a%00b",
				"/api/v1/events?actorId=%00",
				"/api/v1/events?targetId=x%00",
				"/api/v1/events?status=%00",
				"/api/v1/events?entityType=u&entityId=1%00",
				"/api/v1/events?action=%ff",
				"/api/v1/events?action=%ed%a0%80", // an encoded surrogate is invalid UTF-8
				"/api/v1/events?action%00=a",
				"/api/v1/export?action=%00",
				"/api/v1/proof/inclusion?eventId=evt_%00",
				"/api/v1/legal-holds/hold%00/proof?eventId=evt_1",
				"/api/v1/legal-holds/hld_1/proof?eventId=evt_%00",
				"/api/v1/legal-holds/hld_%c3/proof?eventId=evt_1",
			} {
				code, body := s.do(http.MethodGet, target, "")
				var eb errorBody
				if code != http.StatusBadRequest || json.Unmarshal([]byte(body), &eb) != nil || eb.Error == "" {
					t.Errorf("GET %s: %d %s, want 400 with an error", target, code, body)
				}
			}
		})
	}
}

// TestIngestLimits: an object of more than maxObjectMembers members, nesting deeper
// than maxJSONDepth, a number beyond 2^53 in any spelling, and lone surrogates or
// invalid UTF-8 are 400 with the reason.
func TestIngestLimits(t *testing.T) {
	s := newStack(t, "sqlite", 0, 0)
	wide := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"m%d":%d`, i, i)
		}
		return `{"action":"a","actor":{"type":"u","id":"1"},"metadata":{` + b.String() + `}}`
	}
	deep := func(n int) string { // metadata is at depth 1, each level below adds one
		return `{"action":"a","actor":{"type":"u","id":"1"},"metadata":` + strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n+1)
	}
	for _, tc := range []struct {
		name, body string
		status     int
		msg        string
	}{
		{"members at the limit", wide(maxObjectMembers), http.StatusAccepted, ""},
		{"40,000 members", wide(40_000), http.StatusBadRequest, fmt.Sprintf("object with more than %d members", maxObjectMembers)},
		{"depth at the limit", deep(maxJSONDepth - 1), http.StatusAccepted, ""},
		{"depth beyond the limit", deep(maxJSONDepth), http.StatusBadRequest, fmt.Sprintf("nesting deeper than %d", maxJSONDepth)},
		{"2^53+1 as a fraction", `{"action":"a","actor":{"type":"u","id":"1"},"metadata":{"n":9007199254740993.0}}`,
			http.StatusBadRequest, "integer beyond 2^53"},
		{"2^53+1 scaled", `{"action":"a","actor":{"type":"u","id":"1"},"metadata":{"n":90071992547409930e-1}}`,
			http.StatusBadRequest, "integer beyond 2^53"},
		// Text PostgreSQL could not hold besides U+0000 never gets past JCS.
		{"lone surrogate", `{"action":"\ud800","actor":{"type":"u","id":"1"}}`, http.StatusBadRequest, "lone UTF-16 surrogate"},
		{"encoded surrogate", "{\"action\":\"\xed\xa0\x80\",\"actor\":{\"type\":\"u\",\"id\":\"1\"}}", http.StatusBadRequest, "invalid UTF-8"},
		{"invalid UTF-8", "{\"action\":\"\xff\",\"actor\":{\"type\":\"u\",\"id\":\"1\"}}", http.StatusBadRequest, "invalid UTF-8"},
		{"2^53 as a fraction", `{"action":"a","actor":{"type":"u","id":"1"},"metadata":{"n":9007199254740992.0}}`,
			http.StatusAccepted, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := s.do(http.MethodPost, "/api/v1/log", tc.body)
			if code != tc.status || !strings.Contains(body, tc.msg) {
				t.Fatalf("%d %.300s, want %d containing %q", code, body, tc.status, tc.msg)
			}
		})
	}
}

// TestAdminRejectsNUL: U+0000 in the operator API's text (names, reasons, emails, event
// ids) is 400 on both catalogs, not a 500 from PostgreSQL.
func TestAdminRejectsNUL(t *testing.T) {
	for _, kind := range catalogKinds {
		t.Run(kind, func(t *testing.T) {
			s := newStack(t, kind, 0, 0)
			code, body := s.do(http.MethodPost, "/api/v1/log", `{"action":"a","actor":{"type":"u","id":"1"}}`)
			var res ingestResult
			if code != http.StatusAccepted || json.Unmarshal([]byte(body), &res) != nil {
				t.Fatalf("ingest: %d %s", code, body)
			}
			p := "/admin/v1/projects/" + s.project
			for _, tc := range []struct{ path, body string }{
				{"/admin/v1/projects", `{"name":"a\u0000b"}`},
				{p + "/keys", `{"name":"k\u0000","scopes":["log:read"]}`},
				{p + "/members", `{"email":"a\u0000b@example.com","role":"member"}`},
				{p + "/holds", `{"eventIds":["` + res.ID + `"],"reason":"r\u0000"}`},
				{p + "/holds", `{"eventIds":["evt_\u0000"]}`},
			} {
				code, body := s.doAs(stackOperatorToken, http.MethodPost, tc.path, tc.body)
				var eb errorBody
				if code != http.StatusBadRequest || json.Unmarshal([]byte(body), &eb) != nil || eb.Error == "" {
					t.Errorf("POST %s %s: %d %s, want 400 with an error", tc.path, tc.body, code, body)
				}
			}
		})
	}
}
