package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"os"
	"sync/atomic"
	"time"
)

// WAL checkpoints (copying committed pages from the WAL back into the database file)
// run here, on their own connection, rather than in the writer: SQLite's automatic
// checkpoint runs inside whichever commit crosses the threshold, and that seal then
// took tens of milliseconds longer than the others. A PASSIVE checkpoint never waits
// for the writer, and the writer keeps appending while it runs; the next seal after a
// complete checkpoint starts the WAL over from its beginning.
//
// A checkpoint writes each page once however often the commits since the last one
// rewrote it, and the database file is fsynced at its end, so a page it writes costs
// a filesystem block again at the next one. With many project-streams the merges and
// the checkpoint rows rewrite the same scattered pages tick after tick: checkpointing
// every 3 s rather than every 250 ms wrote about a quarter fewer bytes per event with
// 1,000 projects (a third of the catalog's), and about as many as before with one
// project (docs/performance.md, "round13"). Longer was not better: past the kernel's 5 s
// writeback period the dirty pages are written back anyway.
//
// The WAL is bounded by length too. journal_size_limit (walLimitBytes) makes the
// writer cut the file back to that length when it starts the WAL over, so a longer
// file holds more than walLimitBytes of frames since, and the checkpointer runs at its
// next look. A many-project tick writes about 3 KB of WAL per event: at 128 MiB the
// 1,000-project benchmark reached the limit within the 3 s and lost half the gain.
const (
	walCheckInterval = 250 * time.Millisecond // how often the checkpointer looks
	walCheckpointAge = 3 * time.Second        // the longest between two checkpoints
	walLimitBytes    = 256 << 20              // journal_size_limit, and the WAL length that triggers a checkpoint
	// walRestartFrames is the WAL length past which a RESTART checkpoint waits for
	// readers and the writer so the WAL can start over (readers that never let go of
	// old pages would otherwise let it grow without bound).
	walRestartFrames = 262144 // 1 GiB of 4 KiB pages, 256 MiB of 1 KiB ones (pageSize)
)

type walCheckpointer struct {
	c     *sql.DB
	wal   string        // the WAL file's path
	age   time.Duration // walCheckpointAge
	limit int64         // walLimitBytes
	log   *slog.Logger
	runs  atomic.Int64 // checkpoints run
	quit  chan struct{}
	done  chan struct{}
}

func startWALCheckpointer(c *sql.DB, path string, log *slog.Logger) *walCheckpointer {
	return startWALCheckpointerWith(c, path, walCheckpointAge, walLimitBytes, log)
}

func startWALCheckpointerWith(c *sql.DB, path string, age time.Duration, limit int64, log *slog.Logger) *walCheckpointer {
	wc := &walCheckpointer{c: c, wal: path + "-wal", age: age, limit: limit, log: log,
		quit: make(chan struct{}), done: make(chan struct{})}
	go wc.run()
	return wc
}

func (wc *walCheckpointer) run() {
	defer close(wc.done)
	tick := time.NewTicker(walCheckInterval)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-wc.quit:
			return
		case <-tick.C:
		}
		if time.Since(last) < wc.age && !wc.walLong() {
			continue
		}
		last = time.Now()
		wc.runs.Add(1)
		frames, err := wc.checkpoint("PASSIVE")
		if err == nil && frames > walRestartFrames {
			_, err = wc.checkpoint("RESTART")
		}
		if err != nil {
			wc.log.Warn("sqlite: WAL checkpoint", slog.Any("err", err))
		}
	}
}

// walLong reports whether the WAL file is longer than the limit. The writer cuts it
// back to that length when it starts the WAL over, so a longer file holds more than
// that of frames written since.
func (wc *walCheckpointer) walLong() bool {
	fi, err := os.Stat(wc.wal)
	return err == nil && fi.Size() > wc.limit
}

// checkpoint runs a checkpoint of the given mode and returns the WAL's length in frames.
func (wc *walCheckpointer) checkpoint(mode string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var busy, frames, done int64
	err := wc.c.QueryRowContext(ctx, `PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &frames, &done)
	return frames, err
}

// stop stops the checkpointer and closes its connection; the writer's last
// connection to close checkpoints what is left.
func (wc *walCheckpointer) stop() error {
	close(wc.quit)
	<-wc.done
	return wc.c.Close()
}
