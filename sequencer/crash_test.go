package sequencer

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/internal/testenv"
)

// crashRounds is how many times the crash tests kill the sequencer process.
const crashRounds = 50

// testSeed returns the seed of a randomized test: SEALTRAIL_TEST_SEED if set, else
// the clock. It is logged so a failure can be replayed.
func testSeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SEALTRAIL_TEST_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SEALTRAIL_TEST_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (set SEALTRAIL_TEST_SEED to replay)", seed)
	return seed
}

// TestCrashPostgres kills a sequencer process (PostgreSQL catalog, filesystem
// store, real keyring) with SIGKILL at random moments while events are being
// sealed, restarts it, and finally checks that every acknowledged event survived at
// its sequence, that sequences are contiguous, that proofs verify and that a full
// rebuild reproduces the live root (invariants 2 and 4).
func TestCrashPostgres(t *testing.T) {
	dsn := testenv.PostgresDB(t)
	runCrashRounds(t, newStackConfig(t, "postgres", dsn, t.TempDir()))
}

// TestCrashSQLite is TestCrashPostgres on the embedded default. SQLite is one process
// per file; the children never overlap.
func TestCrashSQLite(t *testing.T) {
	dir := t.TempDir()
	runCrashRounds(t, newStackConfig(t, "sqlite", filepath.Join(dir, "catalog.db"), dir))
}

func runCrashRounds(t *testing.T, cfg stackConfig) {
	rng := rand.New(rand.NewPCG(testSeed(t), 0x5e91))
	inflight, killWindow := 256, 400*time.Millisecond
	if raceEnabled {
		inflight, killWindow = 64, 300*time.Millisecond
	}
	var (
		nextTag   atomic.Uint64
		acks      []ack
		retries   []uint64 // signed events sent but unanswered when their child died
		maxAcked  uint64
		unpubKill int // rounds whose kill left committed batches unpublished
	)
	for round := range crashRounds {
		start := time.Now()
		cfg.MaxBatch = []int{1, 7, 64, 10_000}[rng.IntN(4)]
		c := startChild(t, cfg, "crash", inflight)
		early := round >= 2 && rng.IntN(5) == 0
		if early {
			// Kill it while it opens the catalog or recovers.
			time.Sleep(time.Duration(rng.IntN(80)) * time.Millisecond)
			c.kill()
		} else {
			c.waitReady()
			stop := make(chan struct{})
			fed := c.feed(retries, func() (uint64, bool) { return nextTag.Add(1), true }, false, stop)
			time.Sleep(10*time.Millisecond + time.Duration(rng.Int64N(int64(killWindow))))
			c.kill()
			close(stop)
			<-fed
			retries = nil
		}
		got, errs, unanswered := c.results()
		if len(errs) > 0 {
			t.Fatalf("round %d: the child reported errors: %q", round, errs[:min(len(errs), 5)])
		}
		if !early {
			for _, tag := range unanswered {
				if tag%2 == 0 {
					retries = append(retries, tag)
				}
			}
		}
		slices.Sort(retries)
		acks = append(acks, got...)
		for _, a := range got {
			maxAcked = max(maxAcked, a.seq)
		}
		cp := checkpointAfterCrash(t, cfg)
		if cp.Size < maxAcked {
			t.Fatalf("round %d: committed size %d after the kill, but sequence %d was acknowledged", round, cp.Size, maxAcked)
		}
		if cp.PublishedSize < cp.Size {
			unpubKill++
		}
		t.Logf("round %d (%s): max batch %d, early kill %v, %d acknowledged, %d unanswered; committed %d, published %d",
			round, time.Since(start).Round(time.Millisecond), cfg.MaxBatch, early, len(got), len(unanswered), cp.Size, cp.PublishedSize)
	}
	if len(acks) < crashRounds {
		t.Fatalf("only %d events acknowledged in %d rounds: the children made no progress", len(acks), crashRounds)
	}
	vstart := time.Now()
	n := verifyStack(t, cfg, acks)
	t.Logf("verified in %s", time.Since(vstart).Round(time.Millisecond))
	t.Logf("%d rounds, %d acknowledged (%d after a retry), log size %d; %d kills left committed batches unpublished",
		crashRounds, len(acks), countDups(acks), n, unpubKill)
}

func countDups(acks []ack) int {
	n := 0
	for _, a := range acks {
		if a.dup {
			n++
		}
	}
	return n
}

// checkpointAfterCrash reads the committed checkpoint straight from the catalog
// (no Recover), as the crash left it.
func checkpointAfterCrash(t *testing.T, cfg stackConfig) catalog.Checkpoint {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var (
		cat catalog.Catalog
		err error
	)
	if cfg.Catalog == "postgres" {
		cat, err = postgres.Open(ctx, cfg.DSN, postgres.Options{})
	} else {
		cat, err = sqlite.Open(ctx, cfg.DSN, sqlite.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	cp, err := cat.Checkpoint(ctx, stackLog)
	if err != nil && !errorsIsNotFound(err) {
		t.Fatal(err)
	}
	return cp
}

func errorsIsNotFound(err error) bool { return errors.Is(err, catalog.ErrNotFound) }

// TestAckBeforeTilesPostgres: an event is acknowledged at its commit, before its
// tiles exist, and its inclusion proof verifies at once (the child checks each one,
// with publication held back for an hour); then the child is killed with SIGKILL,
// and every acknowledged event survives: the restarted stack materializes the
// committed tree and every proof verifies from tiles.
func TestAckBeforeTilesPostgres(t *testing.T) {
	dsn := testenv.PostgresDB(t)
	runAckBeforeTiles(t, newStackConfig(t, "postgres", dsn, t.TempDir()))
}

// TestAckBeforeTilesSQLite is TestAckBeforeTilesPostgres on the embedded default.
func TestAckBeforeTilesSQLite(t *testing.T) {
	dir := t.TempDir()
	runAckBeforeTiles(t, newStackConfig(t, "sqlite", filepath.Join(dir, "catalog.db"), dir))
}

func runAckBeforeTiles(t *testing.T, cfg stackConfig) {
	cfg.PublishIntervalMS, cfg.Prove = int(time.Hour/time.Millisecond), true
	var acks []ack
	for round := range 3 {
		c := startChild(t, cfg, "ack-before-tiles", 32)
		c.waitReady()
		var next atomic.Uint64
		next.Store(uint64(round) * 1_000_000)
		stop := make(chan struct{})
		fed := c.feed(nil, func() (uint64, bool) { return next.Add(1), true }, false, stop)
		// Let some events be acknowledged (and proved) before the kill.
		deadline := time.Now().Add(time.Minute)
		for {
			c.mu.Lock()
			n := len(c.acks)
			c.mu.Unlock()
			if n >= 200 || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		c.kill()
		close(stop)
		<-fed
		got, errs, _ := c.results()
		if len(errs) > 0 {
			t.Fatalf("round %d: the child reported errors: %q", round, errs[:min(len(errs), 5)])
		}
		unmat := 0
		for _, a := range got {
			if a.unmat {
				unmat++
			}
		}
		cp := checkpointAfterCrash(t, cfg)
		t.Logf("round %d: %d acknowledged, %d of them proved before their tiles existed; committed %d, published %d",
			round, len(got), unmat, cp.Size, cp.PublishedSize)
		if unmat == 0 || cp.PublishedSize >= cp.Size {
			t.Fatalf("round %d: %d events proved unmaterialized, published %d of %d: the test proved nothing", round, unmat, cp.PublishedSize, cp.Size)
		}
		acks = append(acks, got...)
	}
	verifyStack(t, cfg, acks)
}
