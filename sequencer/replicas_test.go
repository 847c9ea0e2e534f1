package sequencer

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/sealtrail/sealtrail/internal/testenv"
)

// TestTwoReplicas runs two sequencer processes on one PostgreSQL database and one
// store directory, both sealing the same project-stream at once, as two sealtraild
// replicas would. There must be one tree: the sequences the two acknowledged are
// distinct and, with the catalog, exactly 1..N; the checkpoint note opens and
// matches the catalog; a full rebuild is valid; and neither process saw a fork
// (which would stop the stream and fail its submissions).
func TestTwoReplicas(t *testing.T) {
	dsn := testenv.PostgresDB(t)
	cfg := newStackConfig(t, "postgres", dsn, t.TempDir())
	cfg.MaxBatch = 50 // many small batches, so the replicas interleave often
	perChild := uint64(3000)
	if raceEnabled {
		perChild = 600
	}
	a := startChild(t, cfg, "a", 128)
	b := startChild(t, cfg, "b", 128)
	a.waitReady()
	b.waitReady()
	// Disjoint tags: a sends 1..n, b sends 1,000,001..; both mix signed and unsigned.
	counter := func(base uint64) func() (uint64, bool) {
		var n atomic.Uint64
		return func() (uint64, bool) {
			i := n.Add(1)
			return base + i, i <= perChild
		}
	}
	fedA := a.feed(nil, counter(0), true, nil)
	fedB := b.feed(nil, counter(1_000_000), true, nil)
	<-fedA
	<-fedB
	a.wait()
	b.wait()
	var all []ack
	owner := map[uint64]string{}
	for _, c := range []*childProc{a, b} {
		acks, errs, unanswered := c.results()
		if c.err != nil || !c.done || len(errs) > 0 || len(unanswered) > 0 || uint64(len(acks)) != perChild {
			t.Fatalf("replica %s: exit %v, done %v, %d acknowledged of %d, %d unanswered, errors %q\n%s",
				c.name, c.err, c.done, len(acks), perChild, len(unanswered), errs[:min(len(errs), 5)], c.stderr.String())
		}
		for _, k := range acks {
			if prev, ok := owner[k.seq]; ok {
				t.Fatalf("sequence %d acknowledged by replica %s and replica %s", k.seq, prev, c.name)
			}
			owner[k.seq] = c.name
		}
		all = append(all, acks...)
	}
	n := verifyStack(t, cfg, all)
	if n != 2*perChild {
		t.Fatalf("log size %d, but %d events were acknowledged and nothing else was sent", n, 2*perChild)
	}
	// How often the tree passed from one replica to the other (informational).
	seqs := make([]uint64, 0, len(owner))
	for s := range owner {
		seqs = append(seqs, s)
	}
	slices.Sort(seqs)
	switches := 0
	for i := 1; i < len(seqs); i++ {
		if owner[seqs[i]] != owner[seqs[i-1]] {
			switches++
		}
	}
	t.Logf("%d events from each replica; the tree changed hands %d times", perChild, switches)
}
