package anchor

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/tiles/mem"
)

// countingPublisher attests nothing and counts its submissions.
type countingPublisher struct{ n int }

func (p *countingPublisher) Type() string { return "witness" }
func (p *countingPublisher) Publish(context.Context, []byte) (string, json.RawMessage, time.Time, error) {
	p.n++
	return "count", json.RawMessage(`{}`), time.Time{}, nil
}

// BenchmarkTenThousandStreams is the scale point: 10,000 project-streams grown
// in one interval are appended in one tree_heads batch, with one external submission.
// It reports the objects written per run. Run with -benchtime=1x (set-up seals 10,000
// streams on the embedded catalog).
func BenchmarkTenThousandStreams(b *testing.B) {
	const streams = 10_000
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "catalog.db"), sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	logs := logsN(streams)
	for i := 0; i < streams; i += 2 {
		if _, err := db.CreateProject(ctx, catalog.Project{ID: logs[i].ProjectID, Name: "p"}); err != nil {
			b.Fatal(err)
		}
	}
	growAll := func() {
		for i := 0; i < streams; i += 1000 {
			n := map[catalog.LogID]int{}
			for _, l := range logs[i : i+1000] {
				n[l] = 1
			}
			if _, err := db.SealGroup(ctx, logs[i:i+1000], catalogtest.GroupOf(n)); err != nil {
				b.Fatal(err)
			}
		}
	}
	store := mem.New()
	pub := &countingPublisher{}
	j, err := New(Config{Catalog: db, Store: store, Origin: testOrigin, Key: testKey(b), Holder: "bench", Publishers: []Publisher{pub}})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		growAll()
		creates, puts, pubs := store.Calls(mem.OpCreate), store.Calls(mem.OpPut), pub.n
		b.StartTimer()
		rep, err := j.RunOnce(ctx)
		if err != nil || rep.Appended != streams || rep.Anchored != streams {
			b.Fatalf("run = %+v, %v", rep, err)
		}
		b.StopTimer()
		if pub.n-pubs != 1 {
			b.Fatalf("%d external submissions, want 1", pub.n-pubs)
		}
		b.ReportMetric(float64(store.Calls(mem.OpCreate)-creates), "creates/op")
		b.ReportMetric(float64(store.Calls(mem.OpPut)-puts), "puts/op")
		b.StartTimer()
	}
}
