package sequencer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

// countingStore counts the object writes (Create and Put) and their bytes.
type countingStore struct {
	tiles.Store
	writes, bytes atomic.Int64
}

func (s *countingStore) Create(ctx context.Context, key string, data []byte, a tiles.Attrs) error {
	s.writes.Add(1)
	s.bytes.Add(int64(len(data)))
	return s.Store.Create(ctx, key, data, a)
}

func (s *countingStore) Put(ctx context.Context, key string, data []byte, a tiles.Attrs) error {
	s.writes.Add(1)
	s.bytes.Add(int64(len(data)))
	return s.Store.Put(ctx, key, data, a)
}

// CreateAll passes a batch write through when the store has it, so the Writer uses
// it as it would without the counting wrapper.
func (s *countingStore) CreateAll(ctx context.Context, objs []tiles.Object, a tiles.Attrs) error {
	s.writes.Add(int64(len(objs)))
	for _, o := range objs {
		s.bytes.Add(int64(len(o.Data)))
	}
	if bc, ok := s.Store.(tiles.BatchCreator); ok {
		return bc.CreateAll(ctx, objs, a)
	}
	for _, o := range objs {
		if err := s.Store.Create(ctx, o.Key, o.Data, a); err != nil {
			return err
		}
	}
	return nil
}

// countingCatalog counts the sequencer's write transactions (SealGroup, Publish) and
// all its catalog calls.
type countingCatalog struct {
	Catalog
	seals, publishes, calls atomic.Int64
	sealNS, publishNS       atomic.Int64 // time spent in SealGroup and Publish
	buildNS                 atomic.Int64 // time spent in the SealFunc (the sequencer's build)
	materializeNS           atomic.Int64 // time spent in the publish function (objects)
}

func (c *countingCatalog) SealGroup(ctx context.Context, logs []catalog.LogID, fn catalog.SealGroupFunc) ([]catalog.Sealed, error) {
	c.seals.Add(1)
	c.calls.Add(1)
	defer func(t0 time.Time) { c.sealNS.Add(int64(time.Since(t0))) }(time.Now())
	return c.Catalog.SealGroup(ctx, logs, func(ctx context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
		defer func(t0 time.Time) { c.buildNS.Add(int64(time.Since(t0))) }(time.Now())
		return fn(ctx, cps)
	})
}

func (c *countingCatalog) Publish(ctx context.Context, log catalog.LogID, fn func(context.Context, catalog.Checkpoint) error) (catalog.Checkpoint, error) {
	c.publishes.Add(1)
	c.calls.Add(1)
	defer func(t0 time.Time) { c.publishNS.Add(int64(time.Since(t0))) }(time.Now())
	return c.Catalog.Publish(ctx, log, func(ctx context.Context, cp catalog.Checkpoint) error {
		defer func(t0 time.Time) { c.materializeNS.Add(int64(time.Since(t0))) }(time.Now())
		return fn(ctx, cp)
	})
}

func (c *countingCatalog) PublishGroup(ctx context.Context, logs []catalog.LogID, fn catalog.PublishGroupFunc) ([]catalog.Published, error) {
	c.publishes.Add(1)
	c.calls.Add(1)
	defer func(t0 time.Time) { c.publishNS.Add(int64(time.Since(t0))) }(time.Now())
	return c.Catalog.PublishGroup(ctx, logs, func(ctx context.Context, cps []catalog.Checkpoint) []error {
		defer func(t0 time.Time) { c.materializeNS.Add(int64(time.Since(t0))) }(time.Now())
		return fn(ctx, cps)
	})
}

func (c *countingCatalog) Checkpoint(ctx context.Context, log catalog.LogID) (catalog.Checkpoint, error) {
	c.calls.Add(1)
	return c.Catalog.Checkpoint(ctx, log)
}

func (c *countingCatalog) BatchesCovering(ctx context.Context, log catalog.LogID, from, to uint64) ([]catalog.Batch, error) {
	c.calls.Add(1)
	return c.Catalog.BatchesCovering(ctx, log, from, to)
}

func (c *countingCatalog) EventsByID(ctx context.Context, log catalog.LogID, ids []string) (map[string]catalog.Event, error) {
	c.calls.Add(1)
	return c.Catalog.EventsByID(ctx, log, ids)
}

// BenchmarkSeal measures sealing on the embedded default (SQLite catalog with
// synchronous=FULL, filesystem store with fsync, real keyring) and on PostgreSQL
// (fsync on, filesystem store): events per second, acknowledgement latency, and the
// cost per event. One benchmark op is one event submitted by one of the producers
// and acknowledged (committed and published).
//
// Sub-benchmarks: batch=1 (MaxBatch 1, one producer: the per-event floor),
// batch=100 (MaxBatch 100, 1,000 producers), batch=10000 (MaxBatch 10,000, 20,000
// producers), and producers=1000 (the default MaxBatch; batches grow with load by
// themselves), the configuration the throughput goal is stated for.
//
// embedded-memstore/producers=1000 is the embedded default with the in-memory store
// instead of the filesystem: the ceiling the SQLite catalog alone sets.
//
// projects=1000 is producers=1000 with the events spread round-robin over 1,000
// projects (one stream each): the many-tenants case of issue #21.
//
// Besides throughput it reports what one event costs in writes: disk-B/event is the
// process's write_bytes from /proc/self/io (the SQLite file and WAL, the term index
// once it has caught up, and the filesystem store, as they reach the block layer),
// wal-B/event PostgreSQL's WAL (pg_stat_wal, which is server-wide: run it on a quiet
// server). cpu-µs/event is the CPU of the measured window; settle-cpu-µs/event that
// of Close and of the term index's catch-up after it (settleTerms). Count fsyncs by
// running the benchmark under strace -f -c -e trace=fsync,fdatasync (docs/catalog.md).
func BenchmarkSeal(b *testing.B) {
	for _, kind := range []string{"embedded", "postgres", "embedded-memstore"} {
		b.Run(kind, func(b *testing.B) {
			for _, c := range []struct {
				name                string
				producers, maxBatch int
			}{
				{"batch=1", 1, 1},
				{"batch=100", 1000, 100},
				{"batch=10000", 20000, 10000},
				{"producers=1000", 1000, 0},
				{"projects=1000", 1000, 0},
			} {
				if kind == "embedded-memstore" && c.maxBatch != 0 {
					continue
				}
				projects := 1
				if c.name == "projects=1000" {
					projects = 1000
				}
				b.Run(c.name, func(b *testing.B) { benchSeal(b, kind, c.producers, c.maxBatch, projects) })
			}
		})
	}
}

func benchSeal(b *testing.B, kind string, producers, maxBatch, projects int) {
	ctx := context.Background()
	dir := benchDir(b)
	cfg := newStackConfig(b, "sqlite", filepath.Join(dir, "catalog.db"), dir)
	if kind == "postgres" {
		cfg = newStackConfig(b, "postgres", testenv.PostgresDB(b), dir)
	}
	cfg.MaxBatch = maxBatch
	var (
		store *countingStore
		cat   *countingCatalog
	)
	st, err := openStack(ctx, cfg, func(c *Config) {
		if kind == "embedded-memstore" {
			c.Store = mem.New()
		}
		store = &countingStore{Store: c.Store}
		cat = &countingCatalog{Catalog: c.Catalog}
		c.Store, c.Catalog = store, cat
	})
	if err != nil {
		b.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			st.close()
		}
	}()
	// Realistic unsigned events, built once: building them is the client's work.
	entries := make([]Entry, 256)
	for i := range entries {
		p, err := tlog.Canonicalize(fmt.Appendf(nil, `{"action":"document.read","actor":{"type":"user","id":"user_%d"},`+
			`"target":{"type":"document","id":"doc_%d"},"status":"success","context":{"ip":"203.0.113.%d","region":"eu-west-1"},`+
			`"metadata":{"bytes":%d,"mime":"application/pdf"}}`, i, i*7, i%250, 1000+i))
		if err != nil {
			b.Fatal(err)
		}
		entries[i] = Entry{Payload: p, Index: Index{Action: "document.read", Status: "success", ActorType: "user",
			ActorID: fmt.Sprintf("user_%d", i), TargetType: "document", TargetID: fmt.Sprintf("doc_%d", i*7)}}
	}
	logs := make([]catalog.LogID, projects)
	for i := range logs {
		logs[i] = stackLog
		if projects > 1 {
			logs[i].ProjectID = fmt.Sprintf("prj_bench%04d", i)
		}
	}
	// Warm up: the checkpoint rows and this epoch's data keys exist before timing.
	var warm sync.WaitGroup
	for _, log := range logs {
		warm.Go(func() {
			if _, err := st.seq.Submit(ctx, log, entries[0]); err != nil {
				b.Error(err)
			}
		})
	}
	warm.Wait()
	if b.Failed() {
		b.FailNow()
	}
	for _, log := range logs {
		if _, err := st.seq.Materialize(ctx, log); err != nil {
			b.Fatal(err)
		}
	}
	sqlBefore := sqlBytes(b, cfg)
	walBefore := walBytes(b, cfg)
	diskBefore := diskWriteBytes(b)
	store.writes.Store(0)
	store.bytes.Store(0)
	cat.seals.Store(0)
	cat.publishes.Store(0)
	cat.calls.Store(0)
	cat.sealNS.Store(0)
	cat.publishNS.Store(0)
	cat.buildNS.Store(0)
	cat.materializeNS.Store(0)

	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	cpuBefore := cpuTime(b)
	start := time.Now()
	for range min(producers, b.N) {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				t0 := time.Now()
				if _, err := st.seq.Submit(ctx, logs[i%int64(len(logs))], entries[i%int64(len(entries))]); err != nil {
					failed.Store(err)
					return
				}
				lat[i] = time.Since(t0)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := cpuTime(b) - cpuBefore
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	// Closing publishes what is still pending, and the term index catches up: their
	// writes count, and their CPU is reported apart.
	st.close()
	closed = true
	if cfg.Catalog == "sqlite" {
		settleTerms(b, cfg.DSN)
	}
	settleCPU := cpuTime(b) - cpuBefore - cpu
	sqlAfter := sqlBytes(b, cfg)
	walAfter := walBytes(b, cfg)
	diskAfter := diskWriteBytes(b)

	n := float64(b.N)
	slices.Sort(lat)
	pct := func(p float64) float64 { return float64(lat[min(len(lat)-1, int(p*n))].Microseconds()) / 1000 }
	b.ReportMetric(n/elapsed.Seconds(), "events/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/event")
	b.ReportMetric(float64(settleCPU.Microseconds())/n, "settle-cpu-µs/event")
	b.ReportMetric(float64(sqlAfter-sqlBefore)/n, "sql-B/event")
	b.ReportMetric(float64(store.bytes.Load())/n, "obj-B/event")
	b.ReportMetric(float64(diskAfter-diskBefore)/n, "disk-B/event")
	if cfg.Catalog == "postgres" {
		b.ReportMetric(float64(walAfter-walBefore)/n, "wal-B/event")
	}
	b.ReportMetric(float64(store.writes.Load())*1000/n, "obj-writes/1k")
	b.ReportMetric(float64(cat.seals.Load()+cat.publishes.Load())*1000/n, "sql-tx/1k")
	b.ReportMetric(float64(cat.calls.Load())*1000/n, "sql-calls/1k")
	if s := cat.seals.Load(); s > 0 {
		b.ReportMetric(n/float64(s), "events/batch")
		b.ReportMetric(float64(cat.sealNS.Load())/float64(s)/1e6, "seal-ms/batch")
		b.ReportMetric(float64(cat.buildNS.Load())/float64(s)/1e6, "build-ms/batch")
	}
	if p := cat.publishes.Load(); p > 0 {
		b.ReportMetric(float64(cat.publishNS.Load())/float64(p)/1e6, "publish-ms/call")
		b.ReportMetric(float64(cat.materializeNS.Load())/float64(p)/1e6, "objects-ms/publish")
	}
}

// cpuTime is the CPU time (user and system) the process has used so far, on every
// core: the benchmark divides it by the events to give the cost of one event on a
// machine whose cores are all busy.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchRoot holds the benchmarks' data until the test binary exits (TestMain removes
// it). Each run used to remove its own directory, tens of thousands of files, right
// before the next run: on ext4 without a journal (these machines) the inode allocator
// then skips recently deleted inodes for minutes, which made every later run spend a
// fifth of its CPU time allocating inodes, a cost the service never incurs (it deletes
// nothing). For the same reason, when benchmarks are run again and again, set
// SEALTRAIL_BENCH_DIR to a directory: the data goes under it and is left there.
var benchRoot string

func benchDir(b *testing.B) string {
	b.Helper()
	if benchRoot == "" {
		root, err := os.MkdirTemp(os.Getenv("SEALTRAIL_BENCH_DIR"), "sealtrail-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchRoot = root
	}
	dir, err := os.MkdirTemp(benchRoot, "run-")
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

// sqlBytes is the size of the catalog's stored data: the SQLite file and its WAL, or
// the PostgreSQL database.
func sqlBytes(b *testing.B, cfg stackConfig) int64 {
	b.Helper()
	if cfg.Catalog == "sqlite" {
		var n int64
		for _, p := range []string{cfg.DSN, cfg.DSN + "-wal"} {
			if fi, err := os.Stat(p); err == nil {
				n += fi.Size()
			}
		}
		return n
	}
	return pgInt(b, cfg, `SELECT pg_database_size(current_database())`)
}

// pgInt runs a query returning one integer on cfg's PostgreSQL database.
func pgInt(b testing.TB, cfg stackConfig, query string) int64 {
	b.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, cfg.DSN)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, query).Scan(&n); err != nil {
		b.Fatal(err)
	}
	return n
}

// diskWriteBytes is the process's write_bytes from /proc/self/io: the bytes this
// process caused to be sent to the block layer (SQLite and the filesystem store).
func diskWriteBytes(b testing.TB) int64 {
	b.Helper()
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Skipf("no /proc/self/io: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("/proc/self/io has no write_bytes")
	return 0
}

// walBytes is PostgreSQL's WAL written so far (server-wide), or 0 for SQLite.
func walBytes(b testing.TB, cfg stackConfig) int64 {
	b.Helper()
	if cfg.Catalog != "postgres" {
		return 0
	}
	return pgInt(b, cfg, `SELECT (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint`)
}
