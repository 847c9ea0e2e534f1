package sqlite

import (
	"context"
	"database/sql"
	"log/slog"
	"time"
)

// WAL checkpoints (copying committed pages from the WAL back into the database file)
// run here, on their own connection, rather than in the writer: SQLite's automatic
// checkpoint runs inside whichever commit crosses the threshold, and that seal then
// took tens of milliseconds longer than the others. A PASSIVE checkpoint never waits
// for the writer, and the writer keeps appending while it runs; the next seal after a
// complete checkpoint starts the WAL over from its beginning.
const (
	walCheckInterval = 250 * time.Millisecond
	// walRestartFrames is the WAL length past which a RESTART checkpoint waits for
	// readers and the writer so the WAL can start over (readers that never let go of
	// old pages would otherwise let it grow without bound).
	walRestartFrames = 262144 // 1 GiB of 4 KiB pages, 256 MiB of 1 KiB ones (pageSize)
)

type walCheckpointer struct {
	c    *sql.DB
	log  *slog.Logger
	quit chan struct{}
	done chan struct{}
}

func startWALCheckpointer(c *sql.DB, log *slog.Logger) *walCheckpointer {
	wc := &walCheckpointer{c: c, log: log, quit: make(chan struct{}), done: make(chan struct{})}
	go wc.run()
	return wc
}

func (wc *walCheckpointer) run() {
	defer close(wc.done)
	tick := time.NewTicker(walCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-wc.quit:
			return
		case <-tick.C:
		}
		frames, err := wc.checkpoint("PASSIVE")
		if err == nil && frames > walRestartFrames {
			_, err = wc.checkpoint("RESTART")
		}
		if err != nil {
			wc.log.Warn("sqlite: WAL checkpoint", slog.Any("err", err))
		}
	}
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
