package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// pubFlushInterval is the least time between two writes of published sizes.
const pubFlushInterval = 100 * time.Millisecond

// published holds the published sizes set through this handle. Publish and
// AdvancePublished raise them in memory, where every read of a checkpoint sees them at
// once, and a background goroutine writes them to the file at most every
// pubFlushInterval, off the acknowledgement path, with synchronous=NORMAL
// (execUnsynced). The file's value is a hint for crash repair that may lag: Recover
// re-publishes from it, and publishing again is idempotent (docs/catalog.md).
type published struct {
	mu    sync.Mutex
	sizes map[catalog.LogID]uint64 // the highest size published through this handle
	dirty map[catalog.LogID]uint64 // sizes not yet written to the file
	wake  chan struct{}
	quit  chan struct{}
	done  chan struct{}
}

func (p *published) start(db *DB) {
	p.sizes = make(map[catalog.LogID]uint64)
	p.dirty = make(map[catalog.LogID]uint64)
	p.wake = make(chan struct{}, 1)
	p.quit = make(chan struct{})
	p.done = make(chan struct{})
	go p.run(db)
}

// stop writes what is pending and stops the writer goroutine.
func (p *published) stop() {
	if p.quit == nil {
		return
	}
	close(p.quit)
	<-p.done
}

// set raises the published size of log to size.
func (p *published) set(log catalog.LogID, size uint64) {
	p.mu.Lock()
	if size > p.sizes[log] {
		p.sizes[log] = size
		p.dirty[log] = size
	}
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// size returns the published size of log set through this handle (0 if none).
func (p *published) size(log catalog.LogID) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sizes[log]
}

// written records that a committed seal wrote size as log's published size in the
// file (tickrows.go): the size need not be written again unless it rose since.
func (p *published) written(log catalog.LogID, size uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if d, ok := p.dirty[log]; ok && d <= size {
		delete(p.dirty, log)
	}
}

// overlay raises cp.PublishedSize to what this handle published, never past cp.Size.
func (p *published) overlay(cp *catalog.Checkpoint) {
	p.mu.Lock()
	s := p.sizes[cp.Log]
	p.mu.Unlock()
	if s > cp.PublishedSize {
		cp.PublishedSize = min(s, cp.Size)
	}
}

func (p *published) run(db *DB) {
	defer close(p.done)
	for {
		select {
		case <-p.quit:
			p.flush(db)
			return
		case <-p.wake:
		}
		p.flush(db)
		select {
		case <-p.quit:
			p.flush(db)
			return
		case <-time.After(pubFlushInterval):
		}
	}
}

// flush writes the dirty sizes, all in one transaction (one WAL append however many
// streams published meanwhile); if it fails they stay dirty for the next time. The
// sizes stay in memory after they are written: a read that got the file's older value
// just before the write relies on them (about a hundred bytes per stream ever
// published through this handle).
func (p *published) flush(db *DB) {
	p.mu.Lock()
	dirty := p.dirty
	p.dirty = make(map[catalog.LogID]uint64)
	p.mu.Unlock()
	if len(dirty) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	err := db.execUnsynced(ctx, func(tx *sql.Tx) error {
		for log, size := range dirty {
			if _, err := tx.ExecContext(ctx, `UPDATE checkpoints SET published_size = ?1
				WHERE log = (SELECT id FROM logs WHERE project_id = ?2 AND stream = ?3) AND published_size < ?1 AND size >= ?1`,
				int64(size), log.ProjectID, string(log.Stream)); err != nil {
				return fmt.Errorf("%s: %w", log, err)
			}
		}
		return nil
	})
	cancel()
	if err != nil {
		p.mu.Lock()
		defer p.mu.Unlock()
		db.log.Warn("sqlite: writing published sizes", slog.Int("streams", len(dirty)), slog.Any("err", err))
		for log, size := range dirty {
			p.dirty[log] = max(p.dirty[log], size)
		}
		select {
		case p.wake <- struct{}{}:
		default:
		}
		return
	}
}
