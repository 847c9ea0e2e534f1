package client

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/sealtrail/sealtrail/tlog"
)

// TestBodiesAreCanonical: Log and LogBatch send their bodies in RFC 8785 form, signed
// or not, also when the event's members and strings are not in that form as
// json.Marshal writes them (struct order, <, > and & escaped).
func TestBodiesAreCanonical(t *testing.T) {
	var mu sync.Mutex
	var got [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, raw)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/log/batch" {
			_, _ = io.WriteString(w, `{"sealed":2,"results":[{"index":0,"status":"sealed","id":"evt_a"},{"index":1,"status":"sealed","id":"evt_b"}]}`)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"id":"evt_a","status":"sealed"}`)
	}))
	defer srv.Close()
	_, priv, _ := tlog.GenerateKey()
	events := []EventInput{
		{Action: "doc.share", Actor: Entity{Type: "user", ID: "u<1>", Display: "A & B"}, Status: "success",
			Target: &Entity{Type: "doc", ID: "d1"}, Metadata: map[string]any{"z": 1.5, "a": []any{"x", 2}}, RequestID: "r1"},
		{Action: "login", Actor: Entity{Type: "user", ID: "u2"}},
	}
	for _, cfg := range []Config{
		{APIKey: "stk_x", BaseURL: srv.URL, AutoVerify: boolPtr(false)},
		{APIKey: "stk_x", BaseURL: srv.URL, AutoVerify: boolPtr(false), SigningKeyID: "sk_1", SigningPrivateKey: hex.EncodeToString(priv.Seed())},
	} {
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		got = nil
		if _, err := c.Log(context.Background(), events[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := c.LogBatch(context.Background(), events); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if len(got) != 2 {
			t.Fatalf("signed %v: %d requests, want 2", cfg.SigningKeyID != "", len(got))
		}
		for _, body := range got {
			canon, err := tlog.Canonicalize(body)
			if err != nil || !bytes.Equal(canon, body) {
				t.Errorf("signed %v: sent %s\nits canonical form is %s (%v)", cfg.SigningKeyID != "", body, canon, err)
			}
		}
	}
}
