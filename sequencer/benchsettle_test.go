package sequencer

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog/sqlite"
)

// settleTerms reopens the SQLite catalog at path, waits until its term indexer has
// indexed every whole chunk (sqlite.TermChunk events of a project-stream) that waits,
// and closes it. The indexer works behind the seals
// and Close leaves what it has not done to the next Open, so without this a benchmark
// would not charge its events for their term index (BenchmarkSeal charges the bytes
// and reports the CPU apart, as settle-cpu-µs/event).
func settleTerms(b *testing.B, path string) {
	b.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	r, err := sql.Open("sqlite", "file:"+path+"-terms?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	r.SetMaxOpenConns(1)
	if _, err := r.ExecContext(ctx, `ATTACH DATABASE ? AS cat`, "file:"+path+"?mode=ro"); err != nil {
		b.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Minute); ; {
		var behind int
		if err := r.QueryRowContext(ctx, `SELECT count(*) FROM cat.checkpoints c
			LEFT JOIN term_state s ON s.log = c.log WHERE coalesce(s.indexed_seq, 0) + ? <= c.size`, sqlite.TermChunk).Scan(&behind); err != nil {
			b.Fatal(err)
		}
		if behind == 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("the term index of %s still lags on %d logs after 5 minutes", path, behind)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
