package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/internal/loadtest"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

// sealingSequencer acknowledges every entry at once, with ids minted once: the
// handler's own cost, without the sequencer's.
type sealingSequencer struct {
	scriptedSequencer // project_audit records
	ids               []string
}

func (s sealingSequencer) SubmitMany(_ context.Context, _ catalog.LogID, es []sequencer.Entry) ([]sequencer.Result, []error) {
	res := make([]sequencer.Result, len(es))
	for i := range res {
		res[i] = sequencer.Result{ID: s.ids[i%len(s.ids)], Sequence: uint64(i + 1)}
	}
	return res, make([]error, len(es))
}

// BenchmarkIngestBatch measures the handler's CPU for POST /api/v1/log/batch with
// 1,000 unsigned events of about 1 KB each (not in canonical form, as the Go client
// sent them before batch5: the handler canonicalizes the body),
// from authentication to the 200, with a sequencer that acknowledges at once:
// cpu-µs/event is the API's own cost per event.
func BenchmarkIngestBatch(b *testing.B) {
	const n = 1000
	var body bytes.Buffer
	body.WriteString(`{"events":[`)
	for i := range n {
		if i > 0 {
			body.WriteByte(',')
		}
		fmt.Fprintf(&body, `{"action":"load.event","actor":{"type":"user","id":"u%d"},"metadata":{"pad":"%s"}}`,
			i, strings.Repeat("x", 950))
	}
	body.WriteString(`]}`)
	benchIngestBatch(b, body.Bytes())
}

// BenchmarkIngestBatchCanonical is BenchmarkIngestBatch with the body the Go client
// sends (loadtest.Batch: canonical JSON, which the handler takes as it is).
func BenchmarkIngestBatchCanonical(b *testing.B) {
	benchIngestBatch(b, loadtest.Batch(0, 1000, 1024))
}

func benchIngestBatch(b *testing.B, body []byte) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "c.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	const n = 1000
	seq := sealingSequencer{ids: make([]string, n)}
	for i := range seq.ids {
		if seq.ids[i], err = tlog.NewEventID(time.Now()); err != nil {
			b.Fatal(err)
		}
	}
	ctl := control.New(db, seq, nil)
	actor := control.Actor{Type: "operator", ID: "bench"}
	p, err := ctl.CreateProject(ctx, actor, "p")
	if err != nil {
		b.Fatal(err)
	}
	token, _, err := ctl.CreateAPIKey(ctx, actor, p.ID, "", []string{catalog.ScopeWrite}, time.Time{})
	if err != nil {
		b.Fatal(err)
	}
	_, key, _ := tlog.GenerateKey()
	s, err := New(Config{Control: ctl, Sequencer: seq, Catalog: db, Key: key, Store: mem.New(),
		RateLimit: 1 << 30, MaxBatchEvents: n})
	if err != nil {
		b.Fatal(err)
	}
	h := s.Handler()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime(b)
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/api/v1/log/batch", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("User-Agent", "sealtrail-load")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"sealed":1000,`)) {
			b.Fatalf("got %d %.200s", rec.Code, rec.Body)
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N)/n/1e3, "cpu-µs/event")
}
