package client

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sealtrail/sealtrail/tlog"
)

// TestServiceLogBatch: a batch against the real service seals its valid events in
// order, rejects the invalid one with its field errors, and every sealed event has a
// verifying inclusion proof.
func TestServiceLogBatch(t *testing.T) {
	s := realService(t)
	ctx := context.Background()
	c, err := New(Config{APIKey: s.apiKey, BaseURL: s.base})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	actor := "batch-" + t.Name()
	events := []EventInput{
		{Action: "batch.one", Actor: Entity{Type: "user", ID: actor}},
		{Action: "", Actor: Entity{Type: "user", ID: actor}},
		{Action: "batch.three", Actor: Entity{Type: "user", ID: actor}, Metadata: map[string]any{"n": 3}},
	}
	res, err := c.LogBatch(ctx, events)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sealed != 2 || len(res.Results) != 3 {
		t.Fatalf("result %+v", res)
	}
	bad := res.Results[1]
	if bad.Status != BatchRejected || bad.Code != http.StatusBadRequest || len(bad.FieldErrors) != 1 || bad.FieldErrors[0].Field != "action" {
		t.Fatalf("invalid event: %+v", bad)
	}
	var seqs []uint64
	for _, i := range []int{0, 2} {
		it := res.Results[i]
		if it.Status != BatchSealed || !strings.HasPrefix(it.ID, "evt_") {
			t.Fatalf("event %d: %+v", i, it)
		}
		v, err := c.VerifyInclusion(ctx, StreamEvents, it.ID)
		if err != nil {
			t.Fatalf("VerifyInclusion %s: %v", it.ID, err)
		}
		seqs = append(seqs, v.Proof.LeafIndex)
	}
	if seqs[0] >= seqs[1] {
		t.Fatalf("sequences %v do not follow the batch order", seqs)
	}
	c.Wait()
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestServiceLogBatchSigned: signed events in a batch are sealed under the client's
// ids, and their signatures verify from the stored events.
func TestServiceLogBatchSigned(t *testing.T) {
	s := realService(t)
	ctx := context.Background()
	p, err := s.newSignedProject("signed " + t.Name())
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{APIKey: p.apiKey, BaseURL: s.base, SigningKeyID: p.keyID, SigningPrivateKey: p.privateKey})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var events []EventInput
	for i := range 5 {
		events = append(events, EventInput{Action: "payment.approve", Actor: Entity{Type: "user", ID: "bob"},
			Metadata: map[string]any{"i": i}})
	}
	res, err := c.LogBatch(ctx, events)
	if err != nil || res.Sealed != 5 {
		t.Fatalf("LogBatch: %+v, %v", res, err)
	}
	page, err := c.Query(ctx, QueryInput{})
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := tlog.ParsePublicKey(p.publicKey)
	if len(page.Events) != 5 {
		t.Fatalf("%d events stored, want 5", len(page.Events))
	}
	for j, e := range page.Events {
		// Newest first: the last event of the batch comes first.
		if want := res.Results[4-j].ID; e.ID != want || e.ClientSignature == nil {
			t.Fatalf("stored event %d is %s (signature %v), want %s", j, e.ID, e.ClientSignature, want)
		}
		ph, _ := tlog.ParseHash(e.PayloadHash)
		if err := tlog.VerifyEventSignature(pub, e.ID, ph, *e.ClientSignature); err != nil {
			t.Fatalf("signature of %s: %v", e.ID, err)
		}
	}
}

// TestLogBatchResend: a signed batch resends only its unavailable events, byte for
// byte; an unsigned one never resends; an answer without one result per event is
// ErrUnexpectedResponse.
func TestLogBatchResend(t *testing.T) {
	var mu sync.Mutex
	var sent [][]json.RawMessage
	var answer func(n int) string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct{ Events []json.RawMessage }
		if r.URL.Path != "/api/v1/log/batch" || json.Unmarshal(raw, &body) != nil {
			http.Error(w, "unexpected request", http.StatusTeapot)
			return
		}
		mu.Lock()
		sent = append(sent, body.Events)
		n := len(sent)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, answer(n))
	}))
	defer srv.Close()
	_, priv, _ := tlog.GenerateKey()
	signed, err := New(Config{APIKey: "stk_x", BaseURL: srv.URL, AutoVerify: boolPtr(false),
		SigningKeyID: "sk_1", SigningPrivateKey: hex.EncodeToString(priv.Seed())})
	if err != nil {
		t.Fatal(err)
	}
	defer signed.Close()
	three := []EventInput{{Action: "a", Actor: Entity{Type: "u", ID: "1"}}, {Action: "b", Actor: Entity{Type: "u", ID: "1"}},
		{Action: "c", Actor: Entity{Type: "u", ID: "1"}}}
	answer = func(n int) string {
		if n == 1 {
			return `{"sealed":2,"results":[{"index":0,"status":"sealed","id":"evt_a"},` +
				`{"index":1,"status":"unavailable","code":503,"error":"busy","retryAfter":1},` +
				`{"index":2,"status":"sealed","id":"evt_c"}]}`
		}
		return `{"sealed":1,"results":[{"index":0,"status":"sealed","id":"evt_b"}]}`
	}
	res, err := signed.LogBatch(context.Background(), three)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sealed != 3 || res.Results[1].ID != "evt_b" || res.Results[1].Index != 1 {
		t.Fatalf("result %+v", res)
	}
	if len(sent) != 2 || len(sent[1]) != 1 || string(sent[1][0]) != string(sent[0][1]) {
		t.Fatalf("sends %d; resent %q, want exactly event 1", len(sent), sent[1:])
	}

	unsigned, err := New(Config{APIKey: "stk_x", BaseURL: srv.URL, AutoVerify: boolPtr(false)})
	if err != nil {
		t.Fatal(err)
	}
	defer unsigned.Close()
	sent = nil
	res, err = unsigned.LogBatch(context.Background(), three)
	if err != nil || len(sent) != 1 || res.Sealed != 2 || res.Results[1].Status != BatchUnavailable {
		t.Fatalf("unsigned: %+v, %v after %d sends", res, err, len(sent))
	}

	for _, bad := range []string{
		`{"sealed":1,"results":[{"index":0,"status":"sealed","id":"evt_a"}]}`,
		`{"sealed":3,"results":[{"index":0,"status":"sealed","id":"evt_a"},{"index":2,"status":"sealed","id":"evt_b"},{"index":1,"status":"sealed","id":"evt_c"}]}`,
		`{"sealed":2,"results":[{"index":0,"status":"sealed"},{"index":1,"status":"sealed","id":"evt_b"},{"index":2,"status":"sealed","id":"evt_c"}]}`,
	} {
		answer = func(int) string { return bad }
		if _, err := unsigned.LogBatch(context.Background(), three); !errors.Is(err, ErrUnexpectedResponse) {
			t.Errorf("answer %s: %v, want ErrUnexpectedResponse", bad, err)
		}
	}
}
