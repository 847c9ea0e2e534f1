package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
)

// walFramesByTree reads the catalog's WAL at path and attributes each valid frame to
// the B-tree (table or index) that owns its page, from SQLite's dbstat table read on
// c: where a tick's frames go. Pages dbstat does not name (the header page, freelist
// pages) count under "other".
func walFramesByTree(tb testing.TB, ctx context.Context, c *sql.DB, path string) (map[string]int, int) {
	tb.Helper()
	b, err := os.ReadFile(path + "-wal")
	if err != nil || len(b) < 32 {
		return nil, 0
	}
	owner := map[uint32]string{}
	if err := eachRow(ctx, c, `SELECT name, pageno FROM dbstat`, nil, func(r *sql.Rows) error {
		var name string
		var page int64
		err := r.Scan(&name, &page)
		owner[uint32(page)] = name
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	size := int(binary.BigEndian.Uint32(b[8:12]))
	salt1, salt2 := binary.BigEndian.Uint32(b[16:20]), binary.BigEndian.Uint32(b[20:24])
	out := map[string]int{}
	frames := 0
	for off := 32; off+24+size <= len(b); off += 24 + size {
		h := b[off : off+24]
		if binary.BigEndian.Uint32(h[8:12]) != salt1 || binary.BigEndian.Uint32(h[12:16]) != salt2 {
			break
		}
		frames++
		name := owner[binary.BigEndian.Uint32(h[0:4])]
		if name == "" {
			name = "other"
		}
		out[name]++
	}
	return out, frames
}

// formatTrees lists frames per tree, most first, divided by per.
func formatTrees(m map[string]int, per float64) string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return m[b] - m[a] })
	var sb strings.Builder
	for _, n := range names {
		fmt.Fprintf(&sb, " %s=%.2f", n, float64(m[n])/per)
	}
	return sb.String()
}

// manyStreamTicks opens a catalog with its background checkpointer and term indexer
// stopped, seals warm ticks of one event in each of streams project-streams (so every
// stream has its checkpoint and rows), merges and checkpoints the WAL, then seals
// ticks more such ticks, merges, and returns the WAL frames the ticks and the merge
// appended, by tree, with the total. Each setup runs on the opened catalog first.
func manyStreamTicks(tb testing.TB, opts Options, streams, warm, ticks int, setup ...func(*DB)) (map[string]int, int) {
	return streamTicks(tb, opts, streams, streams, warm, ticks, setup...)
}

// streamTicks is manyStreamTicks with measured ticks of perTick of the streams each:
// tick j seals streams j, j+stride, j+2*stride, ... (mod streams), stride =
// streams/perTick, so that a tick's streams are spread over the catalog as a quiet
// tenant's are. The warm ticks seal every stream.
func streamTicks(tb testing.TB, opts Options, streams, perTick, warm, ticks int, setup ...func(*DB)) (map[string]int, int) {
	tb.Helper()
	ctx := context.Background()
	path := filepath.Join(tb.TempDir(), "catalog.db")
	db := openMeasured(tb, path, opts)
	for _, f := range setup {
		f(db)
	}
	logs := make([]catalog.LogID, streams)
	for i := range logs {
		// As long as the ids the service mints: "prj_" and 26 characters.
		logs[i] = catalog.LogID{ProjectID: fmt.Sprintf("prj_many%022d", i), Stream: catalog.StreamEvents}
	}
	// A compact range of a stream some thousands of events long, as in the load test.
	rng := make([]catalog.Hash, 8)
	for i := range rng {
		rng[i] = catalogtest.H(fmt.Sprint("r", i))
	}
	// Each tick's batches name their segments of one group payload object, with batch
	// ids of the sequencer's form (24 hex digits), as the service's rows do.
	tick := 0
	fn := func(_ context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
		tick++
		object := fmt.Sprintf("payload/20261127T23/%d-%024x", 1764287000000+tick, tick)
		out := make([]*catalog.SealBatch, len(cps))
		for k, cp := range cps {
			out[k] = &catalog.SealBatch{BatchID: fmt.Sprintf("%012x%012x", k, cp.Size+1),
				Object: object, Offset: uint64(k) * 1200, Length: 1200,
				Events: catalogtest.MakeEvents(fmt.Sprintf("evt_%04d_", k), cp.Size+1, 1),
				Root:   catalogtest.H(fmt.Sprint(cp.Size)), Range: rng}
		}
		return out, nil, nil
	}
	seal := func(n, per int) {
		stride := streams / per
		for t := 0; t < n; t++ {
			some := logs
			if per < streams {
				some = make([]catalog.LogID, per)
				for k := range some {
					some[k] = logs[(t+k*stride)%streams]
				}
			}
			if _, err := db.SealGroup(ctx, some, fn); err != nil {
				tb.Fatal(err)
			}
		}
	}
	seal(warm, streams)
	if err := db.mergeRecent(ctx); err != nil {
		tb.Fatal(err)
	}
	if _, err := db.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		tb.Fatal(err)
	}
	// The merger is stopped too: the ticks, then one merge of all they left.
	db.stopMerger()
	seal(ticks, perTick)
	if err := db.mergeRecent(ctx); err != nil {
		tb.Fatal(err)
	}
	return walFramesByTree(tb, ctx, db.w, path)
}

// BenchmarkManyStreamTicks reports the WAL frames per event of ticks of one event in
// each of 1,000 project-streams (the load test's 1,000-project case), by tree.
func BenchmarkManyStreamTicks(b *testing.B) {
	const streams, ticks = 1000, 20
	var total int
	for i := 0; i < b.N; i++ {
		byTree, frames := manyStreamTicks(b, Options{}, streams, 5, ticks)
		total += frames
		if i == 0 {
			b.Logf("frames per event by tree:%s", formatTrees(byTree, streams*ticks))
		}
	}
	b.ReportMetric(float64(total)/float64(b.N*streams*ticks), "frames/event")
}
