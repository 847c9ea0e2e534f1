package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// Time filters run on sequence bounds rather than on an index of receive times.
//
// The sequencer gives all the events of a batch one receive time, never earlier than
// the previous batch's (sequencer.timestamp), so within a project-stream receive times
// rise with the sequence. A time range [from, to) is then the sequences from the first
// received at or after from up to, not including, the first received at or after to:
// two binary searches over the rowids, about 40 point look-ups each, whatever the
// size of the project-stream. A page of a time range is then a walk of a key range
// that stops after a page, instead of an index range sorted whole before the first
// row is returned, and no seal pays for a fifth index (migrations/0003).
//
// The catalog does not rely on its callers for this: logs.times_ordered records
// whether the receive times of the project-stream have never decreased. A seal that
// would make one decrease clears it (noteTimes, in the seal's transaction), and from
// then on time filters on that project-stream check the receive time of every row in
// the key range instead (correct, and as slow as a filter without an index).

// noteTimes clears times_ordered of project-stream n, in the seal's transaction, if
// the receive times of events (sequences size+1...) are not each at least the one
// before, the first compared with that of sequence size: *lastMS if lastMS is not
// nil, else read with lastTime (tickStmts.lastTime).
func noteTimes(ctx context.Context, tx *sql.Tx, lastTime *sql.Stmt, n int64, size uint64, lastMS *int64, events []catalog.Event) error {
	var prev int64
	switch {
	case size == 0:
	case lastMS != nil:
		prev = *lastMS
	default:
		err := tx.StmtContext(ctx, lastTime).QueryRowContext(ctx, key(n, size)).Scan(&prev)
		if errors.Is(err, sql.ErrNoRows) {
			// No row for the last sequence (never so in a catalog this package
			// wrote): nothing to compare with, so assume the worst.
			return clearTimesOrdered(ctx, tx, n)
		}
		if err != nil {
			return fmt.Errorf("receive time of sequence %d: %w", size, err)
		}
	}
	for i := range events {
		t := ms(events[i].ReceivedAt)
		if (size > 0 || i > 0) && t < prev {
			return clearTimesOrdered(ctx, tx, n)
		}
		prev = t
	}
	return nil
}

func clearTimesOrdered(ctx context.Context, tx *sql.Tx, n int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE logs SET times_ordered = 0 WHERE id = ? AND times_ordered <> 0`, n); err != nil {
		return fmt.Errorf("clear times_ordered: %w", err)
	}
	return nil
}

// timeBounds narrows the key range (lo, hi) of project-stream n to the events received
// in [from, to) (a zero time is no bound), when its receive times never decrease; it
// returns the range unchanged when they may. The caller keeps the receive-time
// conditions on the rows either way, so the bounds only ever skip rows that cannot
// match.
func timeBounds(ctx context.Context, tx *sql.Tx, n, lo, hi int64, from, to time.Time) (int64, int64, error) {
	var ordered bool
	if err := tx.QueryRowContext(ctx, `SELECT times_ordered FROM logs WHERE id = ?`, n).Scan(&ordered); err != nil {
		return lo, hi, fmt.Errorf("times_ordered: %w", err)
	}
	if !ordered {
		return lo, hi, nil
	}
	if !from.IsZero() {
		s, err := firstReceived(ctx, tx, n, from)
		if err != nil {
			return lo, hi, err
		}
		lo = max(lo, key(n, s-1)) // keys above it: sequences s and after
	}
	if !to.IsZero() {
		s, err := firstReceived(ctx, tx, n, to)
		if err != nil {
			return lo, hi, err
		}
		if s <= maxSeq {
			hi = min(hi, key(n, s)) // keys below it: sequences before s
		}
	}
	return lo, hi, nil
}

// firstReceivedQuery is a binary search over the sequences of project-stream ?1 (its
// keys are ?1 << seqBits | seq): the state (lo, hi) starts at (1, last sequence + 1),
// and each step looks up the receive time of the middle sequence, keeping the half
// that holds the answer. The answer is where lo meets hi. Each step halves hi - lo,
// so a search ends after at most 41 steps. A missing row (none in a catalog this
// package wrote) counts as received before ?2.
//
// A row is in events or in events_recent (recent.go): the last key is the larger of
// the two tables' last, and each step reads the middle row from whichever holds it.
var firstReceivedQuery = strings.ReplaceAll(strings.ReplaceAll(`WITH RECURSIVE bisect(lo, hi) AS (
	SELECT 1, max(coalesce((SELECT max(k) FROM events WHERE k > ?1 << BITS AND k < (?1 + 1) << BITS) - (?1 << BITS), 0),
		coalesce((SELECT max(k) FROM events_recent WHERE k > ?1 << BITS AND k < (?1 + 1) << BITS) - (?1 << BITS), 0)) + 1
	UNION ALL
	SELECT CASE WHEN MIDTIME >= ?2 THEN lo ELSE (lo + hi) / 2 + 1 END,
		CASE WHEN MIDTIME >= ?2 THEN (lo + hi) / 2 ELSE hi END
	FROM bisect WHERE lo < hi
)
SELECT lo FROM bisect WHERE lo >= hi`, "MIDTIME", `coalesce(
		(SELECT received_ms FROM events WHERE k = (?1 << BITS) + (lo + hi) / 2),
		(SELECT received_ms FROM events_recent WHERE k = (?1 << BITS) + (lo + hi) / 2))`), "BITS", strconv.Itoa(seqBits))

// firstReceived returns the first sequence of project-stream n received at or after
// t, or its last sequence + 1 if there is none. Receive times must not decrease.
func firstReceived(ctx context.Context, tx *sql.Tx, n int64, t time.Time) (uint64, error) {
	var s int64
	if err := tx.QueryRowContext(ctx, firstReceivedQuery, n, t.UnixMilli()).Scan(&s); err != nil {
		return 0, fmt.Errorf("first sequence received at %s: %w", t.UTC().Format(time.RFC3339Nano), err)
	}
	if s < 1 || s > maxSeq+1 {
		return 0, fmt.Errorf("first sequence received at %s: %d out of range", t.UTC().Format(time.RFC3339Nano), s)
	}
	return uint64(s), nil
}
