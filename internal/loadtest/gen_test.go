package loadtest

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/client"
)

// TestBatchIsWhatTheClientSends: Batch's body is byte for byte what the Go client's
// LogBatch sends for the same events (canonical JSON), so the load measures the
// service on what its SDK sends.
func TestBatchIsWhatTheClientSends(t *testing.T) {
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"sealed":3,"results":[{"index":0,"status":"sealed","id":"evt_a"},`+
			`{"index":1,"status":"sealed","id":"evt_b"},{"index":2,"status":"sealed","id":"evt_c"}]}`)
	}))
	defer srv.Close()
	off := false
	c, err := client.New(client.Config{APIKey: "stk_x", BaseURL: srv.URL, AutoVerify: &off})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	const n, size, i = 3, 300, 5
	var events []client.EventInput
	for j := range n {
		_, pad, _ := strings.Cut(string(Event(i*n+j, size)), `"pad":"`)
		events = append(events, client.EventInput{Action: "load.event",
			Actor:    client.Entity{Type: "user", ID: "u" + strconv.Itoa(i*n+j)},
			Metadata: map[string]any{"pad": strings.TrimSuffix(pad, `"}}`)}})
	}
	if _, err := c.LogBatch(context.Background(), events); err != nil {
		t.Fatal(err)
	}
	if want := Batch(i, n, size); !bytes.Equal(got, want) {
		t.Fatalf("the client sent\n%s\nBatch is\n%s", got, want)
	}
}

// TestPrebuiltBodies: Events and Batches return, for every request, the body Event
// and Batch build for it, within the cycle their events repeat in.
func TestPrebuiltBodies(t *testing.T) {
	single := Events(200)
	for _, i := range []int{0, 1, 999, 1000, 12345} {
		if b, n := single(i); n != 1 || !bytes.Equal(b, Event(i, 200)) {
			t.Errorf("Events: request %d sends %q (%d events), want %q", i, b, n, Event(i, 200))
		}
	}
	for _, n := range []int{1000, 3, 8} {
		batch := Batches(n, 100)
		for _, i := range []int{0, 1, 2, 124, 125, 999, 1000, 4321} {
			if b, k := batch(i); k != n || !bytes.Equal(b, Batch(i, n, 100)) {
				t.Errorf("Batches(%d): request %d differs from Batch (%d events)", n, i, k)
			}
		}
	}
}
