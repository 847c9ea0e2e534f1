package sqlite

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// orderTimes gives evs the same receive times, sorted, so that they rise with the
// sequence (as the sequencer's do), and returns evs.
func orderTimes(evs []catalog.Event) []catalog.Event {
	times := make([]time.Time, len(evs))
	for i, e := range evs {
		times[i] = e.ReceivedAt
	}
	slices.SortFunc(times, time.Time.Compare)
	for i := range evs {
		evs[i].ReceivedAt = times[i]
	}
	return evs
}

// timesOrdered reads logs.times_ordered of log.
func timesOrdered(t *testing.T, db *DB, log catalog.LogID) bool {
	t.Helper()
	var ordered bool
	if err := db.r.QueryRowContext(context.Background(), `SELECT times_ordered FROM logs WHERE id = ?`,
		mustLogNum(t, db, log)).Scan(&ordered); err != nil {
		t.Fatal(err)
	}
	return ordered
}

// TestFirstReceived checks the binary search against a scan, at every receive time of
// an ordered log, one millisecond either side of it, and beyond both ends, on a log
// between two others (its key range has neighbours on both sides).
func TestFirstReceived(t *testing.T) {
	ctx := context.Background()
	db := openHeld(t)
	sealBatches(t, db, termLogB, orderTimes(genEvents(8, "b", 20)), 20)
	evs := orderTimes(genEvents(9, "a", 777)) // many receive times are shared
	sealBatches(t, db, termLogA, evs, 1, 2, 100, 300, 374)
	sealBatches(t, db, termLogC, orderTimes(genEvents(10, "c", 20)), 20)
	n := mustLogNum(t, db, termLogA)

	probes := []time.Time{termBase.Add(-time.Hour), termBase.Add(2 * time.Hour)}
	for _, e := range evs {
		probes = append(probes, e.ReceivedAt.Add(-time.Millisecond), e.ReceivedAt, e.ReceivedAt.Add(time.Millisecond))
	}
	tx, err := db.r.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, p := range probes {
		want := uint64(len(evs) + 1)
		for _, e := range evs {
			if !e.ReceivedAt.Before(p) {
				want = e.Sequence
				break
			}
		}
		got, err := firstReceived(ctx, tx, n, p)
		if err != nil || got != want {
			t.Fatalf("firstReceived(+%v) = %d, %v; want %d", p.Sub(termBase), got, err, want)
		}
	}
	// A log with no events: every search ends at sequence 1.
	if got, err := firstReceived(ctx, tx, n+10, termBase); err != nil || got != 1 {
		t.Errorf("firstReceived on an empty log = %d, %v; want 1", got, err)
	}
}

// TestTimesOrdered checks when a seal clears times_ordered, and that time filters
// return the same rows before and after, on logs whose times are ordered and not.
func TestTimesOrdered(t *testing.T) {
	ctx := context.Background()
	db := openHeld(t)
	windows := []catalog.Query{
		{From: termBase.Add(10 * time.Minute), To: termBase.Add(40 * time.Minute)},
		{From: termBase.Add(50 * time.Minute)},
		{To: termBase.Add(5 * time.Minute)},
		{From: termBase.Add(30 * time.Minute), To: termBase.Add(30 * time.Minute)},
		{From: termBase.Add(40 * time.Minute), To: termBase.Add(10 * time.Minute)},
		{Action: "read", From: termBase.Add(20 * time.Minute), To: termBase.Add(25 * time.Minute)},
		{From: termBase.Add(-time.Hour), To: termBase.Add(2 * time.Hour)},
	}
	check := func(t *testing.T, log catalog.LogID, evs []catalog.Event) {
		t.Helper()
		for _, w := range windows {
			for _, desc := range []bool{false, true} {
				q := w
				q.Log, q.Descending, q.Limit = log, desc, 7
				if !pageThrough(t, db, q, expected(evs, q)) {
					t.FailNow()
				}
			}
		}
	}

	evs := orderTimes(genEvents(11, "a", 300))
	sealBatches(t, db, termLogA, evs[:200], 50, 150)
	if !timesOrdered(t, db, termLogA) {
		t.Fatal("times_ordered cleared by ordered seals")
	}
	check(t, termLogA, evs[:200])

	// A failed seal changes nothing, not even the flag: event 201 reuses an id, and
	// its receive time is earlier than event 200's.
	bad := slices.Clone(evs[200:210])
	bad[0].ID, bad[0].ReceivedAt = evs[5].ID, termBase
	if _, err := db.Seal(ctx, termLogA, func(context.Context, catalog.Checkpoint) (*catalog.SealBatch, error) {
		return &catalog.SealBatch{BatchID: "bad", Events: bad, Root: evs[0].LeafHash}, nil
	}); err == nil {
		t.Fatal("a seal reusing an event id succeeded")
	}
	if !timesOrdered(t, db, termLogA) {
		t.Fatal("times_ordered cleared by a failed seal")
	}

	// A batch starting earlier than the last event clears it; filters stay exact.
	evs[200].ReceivedAt = evs[199].ReceivedAt.Add(-time.Millisecond)
	sealBatches(t, db, termLogA, evs[200:], 100)
	if timesOrdered(t, db, termLogA) {
		t.Fatal("times_ordered still set after a receive time went back")
	}
	check(t, termLogA, evs)

	// On a new log, a first batch out of order within itself clears it.
	evsB := orderTimes(genEvents(12, "b", 40))
	evsB[20].ReceivedAt, evsB[21].ReceivedAt = evsB[21].ReceivedAt.Add(time.Millisecond), evsB[20].ReceivedAt
	sealBatches(t, db, termLogB, evsB, 40)
	if timesOrdered(t, db, termLogB) {
		t.Fatal("times_ordered set after a batch out of order")
	}
	check(t, termLogB, evsB)

	// Equal times do not clear it.
	evsC := genEvents(13, "c", 30)
	for i := range evsC {
		evsC[i].ReceivedAt = termBase.Add(time.Duration(i/10) * 20 * time.Minute)
	}
	sealBatches(t, db, termLogC, evsC, 5, 5, 20)
	if !timesOrdered(t, db, termLogC) {
		t.Fatal("times_ordered cleared by equal receive times")
	}
	check(t, termLogC, evsC)
}

// BenchmarkTimeRange measures the first page (100 rows) of a time range in the middle
// of a large ordered log, for a narrow range and for one holding half the log: two
// binary searches and a short walk of a key range, whatever the range's width.
func BenchmarkTimeRange(b *testing.B) {
	ctx := context.Background()
	db := openHeld(b)
	const size = 200_000
	evs := genEvents(14, "a", size)
	for i := range evs {
		evs[i].ReceivedAt = termBase.Add(time.Duration(i/400) * 8 * time.Millisecond) // 400-event batches
	}
	for i := 0; i < size; i += 10_000 {
		sealBatches(b, db, termLogA, evs[i:i+10_000], 10_000)
	}
	for _, width := range []int{2_000, 100_000} {
		b.Run(fmt.Sprintf("events=%d", width), func(b *testing.B) {
			from := size / 4
			q := catalog.Query{Log: termLogA, From: evs[from].ReceivedAt, To: evs[from+width].ReceivedAt, Limit: 100}
			for b.Loop() {
				page, err := db.QueryEvents(ctx, q)
				if err != nil || len(page) != 100 || page[0].Sequence != uint64(from+1) {
					b.Fatalf("%d events, %v", len(page), err)
				}
			}
		})
	}
}
