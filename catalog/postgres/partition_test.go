package postgres_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/catalogtest"
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

// TestPartitions seals events received in months far from now: their partitions are
// created on demand, each row lands in its month's partition, and queries by time
// prune to it.
func TestPartitions(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.PostgresDB(t)
	db := open(t, dsn)
	log := catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}
	months := []time.Time{
		time.Date(2019, 3, 31, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(2019, 4, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2031, 7, 15, 12, 0, 0, 0, time.UTC),
	}
	_, err := db.Seal(ctx, log, func(_ context.Context, cp catalog.Checkpoint) (*catalog.SealBatch, error) {
		evs := catalogtest.MakeEvents("e", cp.Size+1, len(months))
		for i := range evs {
			evs[i].ReceivedAt = months[i]
		}
		return &catalog.SealBatch{BatchID: "b", Events: evs}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT tableoid::regclass::text FROM events ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"events_p201903", "events_p201904", "events_p203107"}; !slices.Equal(parts, want) {
		t.Fatalf("rows are in partitions %v, want %v", parts, want)
	}
	evs, err := db.QueryEvents(ctx, catalog.Query{Log: log, From: months[1], To: months[2]})
	if err != nil || len(evs) != 1 || evs[0].Sequence != 2 {
		t.Fatalf("query of April 2019: %+v, %v", evs, err)
	}
	rows, err = conn.Query(ctx, `EXPLAIN (COSTS OFF) SELECT * FROM events WHERE project_id = 'prj_a' AND stream = 'events'
		AND received_at >= '2019-04-01' AND received_at < '2019-05-01'`)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if p := strings.Join(plan, "\n"); !strings.Contains(p, "events_p201904") || strings.Contains(p, "events_p201903") || strings.Contains(p, "events_p203107") {
		t.Fatalf("a query of April 2019 is not pruned to its partition:\n%s", p)
	}
	if e, err := db.EventByID(ctx, log, "e3"); err != nil || !e.ReceivedAt.Equal(months[2]) {
		t.Fatalf("EventByID across partitions: %+v, %v", e, err)
	}
	if err := db.EnsurePartitions(ctx, months[2], months[2].AddDate(0, 3, 0)); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'events'::regclass`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	// Open made last month to two months ahead (4), the seals 3 more and the month
	// after now, EnsurePartitions 3 more after July 2031.
	if n < 10 {
		t.Fatalf("%d event partitions, want at least 10", n)
	}
}

// TestConcurrentOpen starts several replicas on a fresh database at once: the
// migration lock lets exactly one apply the schema, and all of them work.
func TestConcurrentOpen(t *testing.T) {
	dsn := testenv.PostgresDB(t)
	dbs := make([]*postgres.DB, 3)
	errs := make([]error, len(dbs))
	var wg sync.WaitGroup
	for i := range dbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dbs[i], errs[i] = postgres.Open(context.Background(), dsn, postgres.Options{MaxConns: 4})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(dbs[i].Close)
	}
	log := catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}
	for i, db := range dbs {
		if cp := catalogtest.Seal(t, db, log, string(rune('a'+i)), 2); cp.Size != uint64(2*(i+1)) {
			t.Fatalf("replica %d sealed to size %d", i, cp.Size)
		}
	}
}
