package retention_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/sequencer"
)

// countingCatalog counts the catalog calls of a retention pass, by method.
type countingCatalog struct {
	catalog.RetentionCatalog
	calls, scrubbed, destroyed atomic.Int64
	heldWrites                 atomic.Int64 // ScrubEventSeqs, AddHeldPayloads, RemoveHeldPayloads calls
}

func (c *countingCatalog) ScrubEvents(ctx context.Context, log catalog.LogID, first, last uint64, keep []uint64) (int64, error) {
	c.calls.Add(1)
	n, err := c.RetentionCatalog.ScrubEvents(ctx, log, first, last, keep)
	c.scrubbed.Add(n)
	return n, err
}

func (c *countingCatalog) ScrubEventSeqs(ctx context.Context, log catalog.LogID, seqs []uint64) (int64, error) {
	c.calls.Add(1)
	c.heldWrites.Add(1)
	n, err := c.RetentionCatalog.ScrubEventSeqs(ctx, log, seqs)
	c.scrubbed.Add(n)
	return n, err
}

func (c *countingCatalog) AddHeldPayloads(ctx context.Context, log catalog.LogID, seqs []uint64) error {
	c.calls.Add(1)
	c.heldWrites.Add(1)
	return c.RetentionCatalog.AddHeldPayloads(ctx, log, seqs)
}

func (c *countingCatalog) RemoveHeldPayloads(ctx context.Context, log catalog.LogID, seqs []uint64) error {
	c.calls.Add(1)
	c.heldWrites.Add(1)
	return c.RetentionCatalog.RemoveHeldPayloads(ctx, log, seqs)
}

func (c *countingCatalog) DestroyDataKey(ctx context.Context, log catalog.LogID, epoch string, at time.Time) (catalog.DataKey, error) {
	c.calls.Add(1)
	c.destroyed.Add(1)
	return c.RetentionCatalog.DestroyDataKey(ctx, log, epoch, at)
}

// benchEvents is how many index rows BenchmarkShredEpoch shreds: 10^6 with
// SEALTRAIL_BENCH_SHRED=1 (make bench sets it; setting them up takes minutes), else
// 10^4.
func benchEvents() int {
	if os.Getenv("SEALTRAIL_BENCH_SHRED") != "" {
		return 1_000_000
	}
	return 10_000
}

// BenchmarkShredEpoch shreds one epoch of benchEvents() events (index rows committed
// straight through the catalog, as the sequencer commits them) and reports the time of
// the pass, the rows scrubbed and the data keys destroyed (one).
func BenchmarkShredEpoch(b *testing.B) {
	for name, open := range catalogs {
		b.Run(name, func(b *testing.B) {
			n := benchEvents()
			for range b.N {
				b.StopTimer()
				start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				cat := &countingCatalog{RetentionCatalog: open(b)}
				st := newStack(b, cat, start)
				p, err := st.ctl.CreateProject(context.Background(), operator, "bench")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := st.ctl.SetRetention(context.Background(), operator, p.ID, catalog.StreamEvents, 30); err != nil {
					b.Fatal(err)
				}
				log := catalog.LogID{ProjectID: p.ID, Stream: catalog.StreamEvents}
				if _, err := st.kr.NewSealer(context.Background(), log, "2026-01"); err != nil {
					b.Fatal(err)
				}
				sealRows(b, cat, log, start, n)
				st.clock.Set(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC))
				b.StartTimer()
				began := time.Now()
				done, err := st.job.RunOnce(context.Background())
				elapsed := time.Since(began)
				b.StopTimer()
				if err != nil || len(done) != 1 || done[0].Span.Count != uint64(n) {
					b.Fatalf("RunOnce = %+v, %v", done, err)
				}
				if cat.destroyed.Load() != 1 || cat.scrubbed.Load() != int64(n) {
					b.Fatalf("destroyed %d keys, scrubbed %d rows", cat.destroyed.Load(), cat.scrubbed.Load())
				}
				b.ReportMetric(float64(cat.destroyed.Load()), "keys-destroyed")
				b.ReportMetric(float64(cat.scrubbed.Load()), "rows-scrubbed")
				b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n), "ns/event")
				b.StartTimer()
			}
		})
	}
}

// sealRows commits n index rows received from start on, two seconds apart (all in
// start's month for n up to 10^6), in batches of 10,000.
func sealRows(b *testing.B, cat catalog.Catalog, log catalog.LogID, start time.Time, n int) {
	const batch = 10_000
	for first := 1; first <= n; first += batch {
		cnt := min(batch, n-first+1)
		_, err := cat.Seal(context.Background(), log, func(_ context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
			evs := make([]catalog.Event, cnt)
			for i := range evs {
				seq := cp.Size + 1 + uint64(i)
				evs[i] = catalog.Event{Sequence: seq, ID: fmt.Sprintf("evt_%d", seq), ReceivedAt: start.Add(time.Duration(seq) * 2 * time.Second),
					Action: "doc.read", Status: "success", ActorType: "user", ActorID: fmt.Sprintf("u%d", seq%1000),
					TargetType: "doc", TargetID: fmt.Sprintf("d%d", seq%5000)}
			}
			return &catalog.SealBatch{BatchID: fmt.Sprintf("b%d", first), Events: evs, Range: []catalog.Hash{{1}}, Root: catalog.Hash{2}}, nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueryAfterScrub measures the query cost of the decision to blank shredded
// index values (docs/retention.md): an actor filter and an action filter over 10^5
// rows, before and after the older half of them is scrubbed.
func BenchmarkQueryAfterScrub(b *testing.B) {
	const n = 100_000
	for name, open := range catalogs {
		b.Run(name, func(b *testing.B) {
			cat := open(b)
			log := catalog.LogID{ProjectID: "prj_bench", Stream: catalog.StreamEvents}
			sealRows(b, cat, log, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), n)
			queries := map[string]catalog.Query{
				"actor":  {Log: log, ActorID: "u7", Limit: 50},
				"action": {Log: log, Action: "doc.read", Limit: 50, Descending: true},
			}
			run := func(b *testing.B, q catalog.Query) {
				for b.Loop() {
					if _, err := cat.QueryEvents(context.Background(), q); err != nil {
						b.Fatal(err)
					}
				}
			}
			for qn, q := range queries {
				b.Run("live/"+qn, func(b *testing.B) { run(b, q) })
			}
			if _, err := cat.ScrubEvents(context.Background(), log, 1, n/2, nil); err != nil {
				b.Fatal(err)
			}
			for qn, q := range queries {
				b.Run("scrubbed/"+qn, func(b *testing.B) { run(b, q) })
			}
		})
	}
}

// BenchmarkHoldRelease measures the held copies of a legal hold over holdEvents
// events: the pass that shreds their epoch (it copies each one under the hold key)
// and, once the hold is released, the pass that lets the copies go (it deletes them
// and scrubs the events' index values). It reports each pass's time per held event
// and the catalog writes of both per thousand held events.
//
// On PostgreSQL it runs ANALYZE once the events are in, as autovacuum does within a
// minute in service: on a partition never analyzed, the planner takes a project-stream
// for one row and joins EventsByID's ids to it with a scan of the stream per id (5,000
// ids took 6 s here instead of 50 ms).
func BenchmarkHoldRelease(b *testing.B) {
	const holdEvents = 5000
	for name, open := range catalogs {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			for range b.N {
				b.StopTimer()
				jan := time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)
				var analyze func()
				if name == "postgres" {
					dsn := testenv.PostgresDB(b)
					db, err := postgres.Open(ctx, dsn, postgres.Options{})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(db.Close)
					open = func(testing.TB) catalog.RetentionCatalog { return db }
					analyze = func() {
						conn, err := pgx.Connect(ctx, dsn)
						if err != nil {
							b.Fatal(err)
						}
						defer conn.Close(ctx)
						if _, err := conn.Exec(ctx, "ANALYZE"); err != nil {
							b.Fatal(err)
						}
					}
				}
				cat := &countingCatalog{RetentionCatalog: open(b)}
				st := newStack(b, cat, jan)
				p, err := st.ctl.CreateProject(ctx, operator, "bench")
				if err != nil {
					b.Fatal(err)
				}
				log := catalog.LogID{ProjectID: p.ID, Stream: catalog.StreamEvents}
				var ids []string
				for first := 0; first < holdEvents; first += 1000 {
					es := make([]sequencer.Entry, 1000)
					for i := range es {
						es[i] = entry(b, first+i)
					}
					res, errs := st.seq.SubmitMany(ctx, log, es)
					for i, err := range errs {
						if err != nil {
							b.Fatal(err)
						}
						ids = append(ids, res[i].ID)
					}
				}
				if analyze != nil {
					analyze()
				}
				h, err := st.ctl.CreateHold(ctx, operator, p.ID, ids, "bench")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := st.ctl.SetRetention(ctx, operator, p.ID, catalog.StreamEvents, 30); err != nil {
					b.Fatal(err)
				}
				st.clock.Set(time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC))
				writes := cat.heldWrites.Load()
				b.StartTimer()
				began := time.Now()
				done, err := st.job.RunOnce(ctx)
				shred := time.Since(began)
				b.StopTimer()
				if err != nil || len(done) == 0 || done[0].Held != holdEvents {
					b.Fatalf("shredding RunOnce = %+v, %v", done, err)
				}
				if _, err := st.ctl.ReleaseHold(ctx, operator, p.ID, h.ID); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				began = time.Now()
				if _, err := st.job.RunOnce(ctx); err != nil {
					b.Fatal(err)
				}
				release := time.Since(began)
				b.StopTimer()
				if got, err := cat.HeldPayloads(ctx, log, 1, 1<<40); err != nil || len(got) != 0 {
					b.Fatalf("held copies after the release: %d, %v", len(got), err)
				}
				b.ReportMetric(float64(shred.Nanoseconds())/holdEvents, "shred-ns/held")
				b.ReportMetric(float64(release.Nanoseconds())/holdEvents, "release-ns/held")
				b.ReportMetric(float64(cat.heldWrites.Load()-writes)*1000/holdEvents, "held-writes/1k")
				b.StartTimer()
			}
		})
	}
}
