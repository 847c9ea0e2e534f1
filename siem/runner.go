package siem

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tiles"
)

// Source is what a runner reads: the signed tree of a project-stream and its sealed
// events.
type Source interface {
	// Materialize publishes what is committed and returns the tree whose signed
	// checkpoint now covers it.
	Materialize(ctx context.Context, log catalog.LogID) (tiles.Tree, error)
	// Events reads sealed, published events by sequence (ascending).
	Events(ctx context.Context, log catalog.LogID, seqs []uint64) ([]sequencer.Stored, error)
}

// RunnerCatalog is the part of the catalog a runner uses.
type RunnerCatalog interface {
	ListDestinations(ctx context.Context, projectID string) ([]catalog.Destination, error)
	LeaseDestination(ctx context.Context, id, owner string, now time.Time, ttl time.Duration) (catalog.Destination, error)
	AdvanceDestination(ctx context.Context, id, owner string, from, to uint64, now time.Time) error
	FailDestination(ctx context.Context, id, owner string, attempts int, lastErr string, dead bool, now time.Time) error
}

// RunnerConfig configures a Runner; zero values take the defaults.
type RunnerConfig struct {
	Catalog RunnerCatalog
	Source  Source
	// KEK opens the destinations' secrets (the one Admin sealed them with).
	KEK keyring.Wrapper
	// Owner names this runner in leases (default: random per process).
	Owner string
	// Poll is how often destinations are listed and an idle destination looks for new
	// events (default 1 s).
	Poll time.Duration
	// LeaseTTL is how long a runner holds a destination without renewing it (default
	// 30 s): after a crash, another replica (or the restarted process) takes over
	// after at most this long.
	LeaseTTL time.Duration
	// BatchSize bounds the events of one delivery (default 100).
	BatchSize int
	// MaxAttempts failed deliveries in a row move a destination to dead_letter
	// (default 10).
	MaxAttempts int
	// BackoffBase and BackoffMax shape the wait between failed attempts: base *
	// 2^(attempt-1), at most max, with jitter (defaults 500 ms and 10 s).
	BackoffBase, BackoffMax time.Duration
	Logger                  *slog.Logger
	// Registerer receives the runner's metrics (metrics.go); nil registers none.
	Registerer prometheus.Registerer
}

// Runner delivers every active destination it holds the lease of, each in its own
// goroutine, in sequence order from the destination's cursor. A replica runs one
// Runner; the catalog lease keeps one delivering runner per destination.
type Runner struct {
	cfg     RunnerConfig
	now     func() time.Time
	metrics *metrics

	mu      sync.Mutex
	running map[string]bool // destination ids with a delivering goroutine
	wg      sync.WaitGroup
}

// NewRunner returns a Runner; Run starts it.
func NewRunner(cfg RunnerConfig) (*Runner, error) {
	if cfg.Catalog == nil || cfg.Source == nil || cfg.KEK == nil {
		return nil, errors.New("siem: a runner needs a catalog, a source and a key-encryption key")
	}
	if cfg.Owner == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("siem: runner id: %w", err)
		}
		cfg.Owner = "runner-" + hex.EncodeToString(b[:])
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&cfg.Poll, time.Second)
	def(&cfg.LeaseTTL, 30*time.Second)
	def(&cfg.BackoffBase, 500*time.Millisecond)
	def(&cfg.BackoffMax, 10*time.Second)
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 100
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 10
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Runner{cfg: cfg, now: time.Now, running: map[string]bool{}}
	r.metrics = newMetrics(r, cfg.Registerer)
	return r, nil
}

// delivering is the number of destinations with a delivering goroutine here.
func (r *Runner) delivering() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running)
}

// Run delivers until ctx ends, then waits for the delivering goroutines to stop.
func (r *Runner) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.Poll)
	defer t.Stop()
	for {
		r.scan(ctx)
		select {
		case <-ctx.Done():
			r.wg.Wait()
			return
		case <-t.C:
		}
	}
}

// scan starts a delivering goroutine for each active destination that has none here.
// Whether it may deliver is the lease's to say.
func (r *Runner) scan(ctx context.Context) {
	ds, err := r.cfg.Catalog.ListDestinations(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.WarnContext(ctx, "siem: list destinations", "err", err)
		}
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range ds {
		if d.State != catalog.DestActive || r.running[d.ID] {
			continue
		}
		if d.LeaseOwner != "" && d.LeaseOwner != r.cfg.Owner && d.LeaseUntil.After(r.now()) {
			continue // another runner holds it
		}
		r.running[d.ID] = true
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.deliver(ctx, d)
			r.mu.Lock()
			delete(r.running, d.ID)
			r.mu.Unlock()
		}()
	}
}

// deliver runs one destination while this runner holds its lease and it is active.
func (r *Runner) deliver(ctx context.Context, d catalog.Destination) {
	log := r.cfg.Logger.With(slog.String("destination", d.ID), slog.String("project", d.ProjectID))
	attempts := d.Attempts
	var snd sender
	defer func() {
		if snd != nil {
			_ = snd.Close()
		}
	}()
	for ctx.Err() == nil {
		var err error
		leasedAt := r.now()
		d, err = r.cfg.Catalog.LeaseDestination(ctx, d.ID, r.cfg.Owner, leasedAt, r.cfg.LeaseTTL)
		if err != nil {
			if !errors.Is(err, catalog.ErrConflict) && ctx.Err() == nil {
				log.WarnContext(ctx, "siem: lease", "err", err)
			}
			return
		}
		if d.State != catalog.DestActive {
			return
		}
		if snd == nil {
			s, err := openSettings(ctx, r.cfg.KEK, d.ID, d.Config)
			if err == nil {
				snd, err = newSender(d.Kind, s)
			}
			if err != nil {
				// A config that cannot work will not start working: dead-letter it.
				r.fail(ctx, log, &d, r.cfg.MaxAttempts, err)
				return
			}
		}
		// The attempt must end well inside the lease, so that no other runner can
		// take the destination over while this one is still sending.
		sent, err := r.once(ctx, &d, snd, leasedAt.Add(r.cfg.LeaseTTL*8/10))
		switch {
		case err == nil && sent:
			attempts = 0
			continue
		case err == nil:
			r.sleep(ctx, r.cfg.Poll)
			continue
		case errors.Is(err, errNotDelivery):
			log.WarnContext(ctx, "siem: read events", "err", err)
			r.sleep(ctx, r.cfg.Poll)
			continue
		case errors.Is(err, catalog.ErrConflict):
			return // lost the lease (or the cursor moved): someone else delivers
		}
		attempts++
		if r.fail(ctx, log, &d, attempts, err) {
			return
		}
		r.sleep(ctx, r.backoff(attempts))
	}
}

// errNotDelivery marks failures of this side (reading the log), which are retried
// without counting against the destination.
var errNotDelivery = errors.New("siem: reading the log")

// once delivers the next batch after d's cursor, if any, and advances the cursor.
// The send must finish by deadline.
func (r *Runner) once(ctx context.Context, d *catalog.Destination, snd sender, deadline time.Time) (sent bool, err error) {
	tree, err := r.cfg.Source.Materialize(ctx, d.Log())
	if err != nil {
		return false, fmt.Errorf("%w: %w", errNotDelivery, err)
	}
	if tree.Size <= d.Cursor {
		return false, nil
	}
	last := min(d.Cursor+uint64(r.cfg.BatchSize), tree.Size)
	seqs := make([]uint64, 0, last-d.Cursor)
	for s := d.Cursor + 1; s <= last; s++ {
		seqs = append(seqs, s)
	}
	stored, err := r.cfg.Source.Events(ctx, d.Log(), seqs)
	if err != nil {
		return false, fmt.Errorf("%w: %w", errNotDelivery, err)
	}
	b := &batch{destID: d.ID, projectID: d.ProjectID, stream: string(d.Stream), format: d.Format}
	for i := range stored {
		rec := stored[i].Record()
		e, err := NewEvent(&rec, tree.Size)
		if err != nil {
			return false, fmt.Errorf("%w: %w", errNotDelivery, err)
		}
		out, err := Render(d.Format, &e)
		if err != nil {
			return false, err
		}
		b.events, b.rendered = append(b.events, e), append(b.rendered, out)
	}
	if len(b.events) != len(seqs) || b.first() != seqs[0] || b.last() != last {
		return false, fmt.Errorf("%w: read %d events for %d sequences", errNotDelivery, len(b.events), len(seqs))
	}
	sctx, cancel := context.WithDeadline(ctx, deadline)
	err = snd.Send(sctx, b)
	cancel()
	if err != nil {
		return false, err
	}
	r.metrics.delivered.WithLabelValues(d.Kind).Add(float64(len(seqs)))
	// Delivered: only now does the cursor move, so a crash before this line resends
	// the batch (at least once), and never skips it.
	if err := r.cfg.Catalog.AdvanceDestination(ctx, d.ID, r.cfg.Owner, d.Cursor, last, r.now()); err != nil {
		return false, err
	}
	d.Cursor = last
	return true, nil
}

// fail records a failed attempt and reports whether the destination is now
// dead-lettered.
func (r *Runner) fail(ctx context.Context, log *slog.Logger, d *catalog.Destination, attempts int, cause error) bool {
	dead := attempts >= r.cfg.MaxAttempts
	r.metrics.failures.WithLabelValues(d.Kind).Inc()
	if err := r.cfg.Catalog.FailDestination(ctx, d.ID, r.cfg.Owner, attempts, cause.Error(), dead, r.now()); err != nil {
		log.WarnContext(ctx, "siem: record failure", "err", err)
		return true
	}
	if dead {
		r.metrics.deadLetter.WithLabelValues(d.Kind).Inc()
		log.ErrorContext(ctx, "siem: destination dead-lettered; resume it once the receiver is fixed",
			"attempts", attempts, "cursor", d.Cursor, "err", cause)
	} else {
		log.WarnContext(ctx, "siem: delivery failed; retrying", "attempts", attempts, "cursor", d.Cursor, "err", cause)
	}
	return dead
}

// backoff is the wait after the attempt-th failure in a row: exponential, capped,
// with up to 20% jitter so that replicas and destinations do not retry in step.
func (r *Runner) backoff(attempt int) time.Duration {
	d := r.cfg.BackoffBase << min(attempt-1, 30)
	if d <= 0 || d > r.cfg.BackoffMax {
		d = r.cfg.BackoffMax
	}
	return d - time.Duration(mathrand.Int64N(int64(d)/5+1))
}

func (r *Runner) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
