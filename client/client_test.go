package client

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

func TestNewValidatesConfig(t *testing.T) {
	pub, priv, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	seed := hex.EncodeToString(priv.Seed())
	for _, tc := range []struct {
		name    string
		cfg     Config
		wantErr string
		wantURL string
	}{
		{"no api key", Config{}, "APIKey is required", ""},
		{"defaults", Config{APIKey: "k"}, "", DefaultBaseURL},
		{"trailing slash removed", Config{APIKey: "k", BaseURL: "https://audit.example.com/"}, "", "https://audit.example.com"},
		{"not a URL", Config{APIKey: "k", BaseURL: "audit.example.com"}, "not an http(s) URL", ""},
		{"key id alone", Config{APIKey: "k", SigningKeyID: "sk_1"}, "must be given together", ""},
		{"private key alone", Config{APIKey: "k", SigningPrivateKey: seed}, "must be given together", ""},
		{"seed form", Config{APIKey: "k", SigningKeyID: "sk_1", SigningPrivateKey: seed}, "", DefaultBaseURL},
		{"64-byte form", Config{APIKey: "k", SigningKeyID: "sk_1", SigningPrivateKey: hex.EncodeToString(priv)}, "", DefaultBaseURL},
		{"bad private key", Config{APIKey: "k", SigningKeyID: "sk_1", SigningPrivateKey: "zz"}, "SigningPrivateKey", ""},
		{"upper-case service key", Config{APIKey: "k", ServicePublicKey: strings.ToUpper(hex.EncodeToString(pub))}, "ServicePublicKey", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(tc.cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.BaseURL() != tc.wantURL || !c.autoVerify || c.interval != DefaultAutoVerifyInterval {
				t.Fatalf("base %q autoVerify %v interval %v", c.BaseURL(), c.autoVerify, c.interval)
			}
		})
	}
}

// recorded is one request a recordingServer saw.
type recorded struct {
	method, path string
	query        url.Values
	auth         string
	body         []byte
}

// recordingServer answers every request with status and body, and records it.
func recordingServer(t *testing.T, status int, header http.Header, body string) (*httptest.Server, func() []recorded) {
	t.Helper()
	var mu sync.Mutex
	var reqs []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		reqs = append(reqs, recorded{r.Method, r.URL.Path, r.URL.Query(), r.Header.Get("Authorization"), b})
		mu.Unlock()
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []recorded {
		mu.Lock()
		defer mu.Unlock()
		return append([]recorded(nil), reqs...)
	}
}

// TestRequests: every method calls its endpoint with the documented parameters and
// the bearer key.
func TestRequests(t *testing.T) {
	ctx := context.Background()
	srv, reqs := recordingServer(t, http.StatusOK, nil, `{"events":[],"id":"evt_1","status":"sealed"}`)
	c, err := New(Config{APIKey: "stk_abc", BaseURL: srv.URL + "/", AutoVerify: boolPtr(false)})
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC)
	ev := EventInput{Action: "user.login", Actor: Entity{Type: "user", ID: "alice"}, Metadata: map[string]any{"n": 1}}
	if _, err := c.Log(ctx, ev); err != nil {
		t.Fatal(err)
	}
	_, _ = c.Query(ctx, QueryInput{Action: "user.login", ActorID: "alice", From: from, Limit: 10, Cursor: "cur"})
	_, _ = c.Query(ctx, QueryInput{EntityType: "user", EntityID: "alice", Direction: "outgoing"})
	resp, err := c.Export(ctx, ExportInput{Format: "json", Status: "failed", Max: 7})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	_, _ = c.GetRoot(ctx, StreamProjectAudit)
	_, _ = c.GetInclusionProof(ctx, InclusionProofInput{EventID: "evt_1", TreeSize: 5})
	_, _ = c.GetInclusionProof(ctx, InclusionProofInput{LeafIndex: 0, Stream: StreamProjectAudit})
	_, _ = c.GetConsistencyProof(ctx, ConsistencyProofInput{OldSize: 0, NewSize: 9})
	_, _ = c.GetAnchors(ctx, "", 5)

	want := []struct {
		method, path, query string
	}{
		{"POST", "/api/v1/log", ""},
		{"GET", "/api/v1/events", "action=user.login&actorId=alice&cursor=cur&from=2026-11-21T10%3A00%3A00.123456789Z&limit=10"},
		{"GET", "/api/v1/events", "direction=outgoing&entityId=alice&entityType=user"},
		{"GET", "/api/v1/export", "format=json&max=7&status=failed"},
		{"GET", "/api/v1/root", "stream=project-audit"},
		{"GET", "/api/v1/proof/inclusion", "eventId=evt_1&stream=events&treeSize=5"},
		{"GET", "/api/v1/proof/inclusion", "leafIndex=0&stream=project-audit"},
		{"GET", "/api/v1/proof/consistency", "newSize=9&oldSize=0&stream=events"},
		{"GET", "/api/v1/anchors", "limit=5&stream=events"},
	}
	got := reqs()
	if len(got) != len(want) {
		t.Fatalf("%d requests, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.method != w.method || g.path != w.path || g.query.Encode() != w.query || g.auth != "Bearer stk_abc" {
			t.Errorf("request %d: %s %s?%s (%s), want %s %s?%s", i, g.method, g.path, g.query.Encode(), g.auth, w.method, w.path, w.query)
		}
	}
	var body map[string]any
	if err := json.Unmarshal(got[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body) != 3 || body["action"] != "user.login" {
		t.Errorf("unsigned body %s: want exactly action, actor, metadata", got[0].body)
	}
}

func TestAPIError(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name       string
		status     int
		header     http.Header
		body       string
		message    string
		fields     int
		retryAfter time.Duration
		raw        bool
	}{
		{"schema failure", 400, nil, `{"error":"Invalid event","details":[{"field":"action","message":"is required"}]}`, "Invalid event", 1, 0, false},
		{"auth", 401, nil, `{"error":"Invalid API key"}`, "Invalid API key", 0, 0, false},
		{"rate limit", 429, http.Header{"Retry-After": {"3"}}, `{"error":"Rate limit exceeded"}`, "Rate limit exceeded", 0, 3 * time.Second, false},
		{"proxy text", 502, nil, `upstream gone`, "Bad Gateway", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := recordingServer(t, tc.status, tc.header, tc.body)
			c, err := New(Config{APIKey: "k", BaseURL: srv.URL, AutoVerify: boolPtr(false)})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Log(ctx, EventInput{Action: "a", Actor: Entity{Type: "u", ID: "1"}})
			var ae *APIError
			if !errors.As(err, &ae) {
				t.Fatalf("got %v, want *APIError", err)
			}
			if ae.Status != tc.status || ae.Message != tc.message || len(ae.FieldErrors) != tc.fields || ae.RetryAfter != tc.retryAfter {
				t.Fatalf("got %+v", ae)
			}
			if _, isText := ae.Details.(string); isText != tc.raw {
				t.Fatalf("details %#v", ae.Details)
			}
			if !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("message %q not in %q", tc.message, err.Error())
			}
		})
	}

	// No response at all: Status 0 and the transport error inside.
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	c, err := New(Config{APIKey: "k", BaseURL: srv.URL, AutoVerify: boolPtr(false)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = c.GetRoot(ctx, "")
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("transport failure: %v", err)
	}
}

// TestUnexpectedResponse: a 2xx body that is not the documented shape is an error.
func TestUnexpectedResponse(t *testing.T) {
	srv, _ := recordingServer(t, http.StatusOK, nil, `<html>`)
	c, err := New(Config{APIKey: "k", BaseURL: srv.URL, AutoVerify: boolPtr(false)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetRoot(context.Background(), ""); !errors.Is(err, ErrUnexpectedResponse) {
		t.Fatalf("got %v", err)
	}
	srv2, _ := recordingServer(t, http.StatusOK, nil, `{}`)
	c2, err := New(Config{APIKey: "k", BaseURL: srv2.URL, AutoVerify: boolPtr(false)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Query(context.Background(), QueryInput{}); !errors.Is(err, ErrUnexpectedResponse) {
		t.Fatalf("got %v", err)
	}
}
