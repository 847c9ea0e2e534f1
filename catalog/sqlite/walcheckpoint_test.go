package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// TestWALCheckpointPolicy runs the checkpointer with each of its two triggers alone:
// no checkpoint while neither is due, one per age, and one as soon as the WAL file
// outgrows the limit, after which the writer cuts the file back to the limit when it
// starts the WAL over.
func TestWALCheckpointPolicy(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "catalog.db")
	db := openMeasured(t, path, Options{})
	log := catalog.LogID{ProjectID: "prj_walpolicy", Stream: catalog.StreamEvents}
	evs := genEvents(7, "evt_w", 6000)
	sealed := 0
	seal := func(n int) {
		t.Helper()
		if sealed+n > len(evs) {
			t.Fatalf("the test sealed all its %d events", len(evs))
		}
		sealBatches(t, db, log, evs[sealed:sealed+n], n)
		sealed += n
	}
	walSize := func() int64 {
		t.Helper()
		fi, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	waitRuns := func(wc *walCheckpointer, want int64, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for wc.runs.Load() < want {
			if time.Now().After(deadline) {
				t.Fatalf("%d checkpoints after %v, want %d", wc.runs.Load(), within, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	start := func(age time.Duration, limit int64) *walCheckpointer {
		t.Helper()
		c, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		singleConn(c)
		return startWALCheckpointerWith(c, path, age, limit, db.log)
	}

	// Neither due: an hour's age and a limit far above the WAL.
	wc := start(time.Hour, 1<<40)
	seal(500)
	time.Sleep(4 * walCheckInterval)
	if n := wc.runs.Load(); n != 0 {
		t.Fatalf("%d checkpoints with neither trigger due", n)
	}
	if err := wc.stop(); err != nil {
		t.Fatal(err)
	}

	// By age alone.
	wc = start(3*walCheckInterval, 1<<40)
	waitRuns(wc, 1, 10*walCheckInterval)
	if err := wc.stop(); err != nil {
		t.Fatal(err)
	}

	// By length alone: the writer cuts the file back to the limit (as the service's
	// journal_size_limit does at walLimitBytes), and a longer file is checkpointed at
	// the checkpointer's next look.
	const limit = 256 << 10
	if _, err := db.w.ExecContext(ctx, fmt.Sprintf("PRAGMA journal_size_limit = %d", limit)); err != nil {
		t.Fatal(err)
	}
	wc = start(time.Hour, limit)
	defer wc.stop()
	// The WAL file keeps its largest length until the writer starts it over.
	for walSize() <= limit {
		seal(100)
	}
	waitRuns(wc, 1, 10*walCheckInterval)
	// The first commit after a complete checkpoint starts the WAL over and cuts the
	// file back; while the file stays longer, every look checkpoints again.
	deadline := time.Now().Add(40 * walCheckInterval)
	for {
		seal(10)
		if walSize() <= limit {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("WAL file %d bytes after %d checkpoints, want at most %d", walSize(), wc.runs.Load(), limit)
		}
		time.Sleep(walCheckInterval)
	}
	// Below the limit the file stays as it is and nothing is checkpointed.
	runs := wc.runs.Load()
	time.Sleep(4 * walCheckInterval)
	if n := wc.runs.Load(); n != runs {
		t.Fatalf("%d checkpoints with the WAL below its limit", n-runs)
	}
}
