package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/sealtrail/sealtrail/catalog"
)

// seqBits is how many low bits of an event's key k hold its sequence; the bits above
// hold the project-stream's number (logs.id). A project-stream holds at most 2^40-1
// events here (a trillion; PostgreSQL has no such limit) and a catalog at most 2^23-1
// project-streams.
const (
	seqBits = 40
	maxSeq  = 1<<seqBits - 1
	maxLog  = 1<<(63-seqBits) - 1
)

// key returns the rowid of sequence seq of project-stream number n.
func key(n int64, seq uint64) int64 { return n<<seqBits | int64(seq) }

// sqlKey is key in SQL, of the columns log and seq (the migrations, fixed in time,
// spell out 40).
func sqlKey(log, seq string) string {
	return "(" + log + " << " + strconv.Itoa(seqBits) + ") | " + seq
}

// seqOf returns the sequence held in key k.
func seqOf(k int64) uint64 { return uint64(k) & maxSeq }

// logNums caches the numbers of project-streams; a number never changes once given.
type logNums struct {
	mu sync.Mutex
	m  map[catalog.LogID]int64
}

func (ln *logNums) get(log catalog.LogID) (int64, bool) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	n, ok := ln.m[log]
	return n, ok
}

func (ln *logNums) put(log catalog.LogID, n int64) {
	ln.mu.Lock()
	defer ln.mu.Unlock()
	if ln.m == nil {
		ln.m = make(map[catalog.LogID]int64)
	}
	ln.m[log] = n
}

// logNum returns the number of log; a project-stream that was never sealed has none:
// ok is false (createStreams gives numbers).
func (db *DB) logNum(ctx context.Context, log catalog.LogID) (n int64, ok bool, err error) {
	if n, ok := db.nums.get(log); ok {
		return n, true, nil
	}
	err = db.r.QueryRowContext(ctx, `SELECT id FROM logs WHERE project_id = ? AND stream = ?`,
		log.ProjectID, string(log.Stream)).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("sqlite: number of %s: %w", log, err)
	}
	if n <= 0 || n > maxLog {
		return 0, false, fmt.Errorf("sqlite: %s has number %d; a catalog holds at most %d project-streams", log, n, maxLog)
	}
	db.nums.put(log, n)
	return n, true, nil
}
