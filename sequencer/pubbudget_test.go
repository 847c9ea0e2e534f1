package sequencer

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sealtrail/sealtrail/catalog"
)

// policyPublisher returns a publisher with no Sequencer behind it, for the policy
// alone: take is called with explicit times.
func policyPublisher(rate float64, interval time.Duration) *publisher {
	return &publisher{gap: interval / 2, maxRound: 1000, budget: newPubBudget(rate, interval), flushed: make(chan struct{})}
}

func policyLog(i int) catalog.LogID {
	return catalog.LogID{ProjectID: fmt.Sprintf("prj_pol%05d", i), Stream: catalog.StreamEvents}
}

// queueReq queues a request for log, with backlog leaves to publish, as publish does
// (without waiting for it).
func (p *publisher) queueReq(log catalog.LogID, backlog uint64) *pubReq {
	r := &pubReq{log: log, backlog: func() uint64 { return backlog }, done: make(chan struct{})}
	p.queue = append(p.queue, r)
	return r
}

// A lone quiet stream due every PublishInterval publishes every PublishInterval: the
// budget never holds it back, even at the least budget that allows it
// (one token per interval).
func TestPubBudgetLoneStreamKeepsItsInterval(t *testing.T) {
	const interval = 200 * time.Millisecond
	for _, rate := range []float64{DefaultPublishBudget, 5} {
		p := policyPublisher(rate, interval)
		t0 := time.Unix(1_700_000_000, 0)
		for k := range 100 {
			p.queueReq(policyLog(0), 1)
			if got := p.take(t0.Add(time.Duration(k) * interval)); len(got) != 1 {
				t.Fatalf("rate %v: publication %d of a lone stream held back", rate, k)
			}
		}
	}
}

// With many quiet streams always due, the publications per second stay within the
// budget (burst + rate*t in t seconds), the budget is used, and every stream is
// published about every n/rate seconds: the oldest request goes first, so none
// starves.
func TestPubBudgetBoundsPublicationsWithManyStreams(t *testing.T) {
	const (
		interval = 200 * time.Millisecond
		rate     = 100
		streams  = 1000
		seconds  = 30
	)
	p := policyPublisher(rate, interval)
	t0 := time.Unix(1_700_000_000, 0)
	due := make([]time.Time, streams) // when each stream asks for its next publication
	last := make([]time.Time, streams)
	queued := make([]bool, streams)
	var worst time.Duration
	total := 0
	// Rounds every gap, as publisher.run starts them under load.
	for now := t0; now.Sub(t0) < seconds*time.Second; now = now.Add(p.gap) {
		for i := range streams {
			if !queued[i] && !now.Before(due[i]) {
				p.queueReq(policyLog(i), 3)
				queued[i] = true
			}
		}
		for _, r := range p.take(now) {
			var i int
			if _, err := fmt.Sscanf(r.log.ProjectID, "prj_pol%05d", &i); err != nil {
				t.Fatal(err)
			}
			if !last[i].IsZero() {
				worst = max(worst, now.Sub(last[i]))
			}
			last[i], queued[i], due[i] = now, false, now.Add(interval)
			total++
		}
	}
	bound := p.budget.burst + rate*seconds
	if float64(total) > bound {
		t.Fatalf("%d publications in %d s with a budget of %d/s: more than %v", total, seconds, rate, bound)
	}
	if float64(total) < 0.95*rate*seconds {
		t.Fatalf("%d publications in %d s: the budget of %d/s is not used", total, seconds, rate)
	}
	// Each stream waits for the n-1 others: n/rate, plus a round's spacing.
	if want := time.Duration(streams/rate)*time.Second + 2*p.gap; worst > want || worst < want/2 {
		t.Fatalf("worst interval between two publications of a stream %v, want about %v", worst, want)
	}
	for i, at := range last {
		if at.IsZero() {
			t.Fatalf("stream %d never published", i)
		}
	}
}

// A stream with a tile or more to publish is not held back by an exhausted budget,
// and Close (flush) lifts the budget for everyone.
func TestPubBudgetBusyStreamAndClose(t *testing.T) {
	p := policyPublisher(10, 200*time.Millisecond)
	now := time.Unix(1_700_000_000, 0)
	for i := range 50 {
		p.queueReq(policyLog(i), 1)
	}
	if got := len(p.take(now)); float64(got) != p.budget.burst {
		t.Fatalf("first round took %d quiet streams, want the burst %v", got, p.budget.burst)
	}
	p.queueReq(policyLog(100), busyBacklog-1)
	p.queueReq(policyLog(101), busyBacklog)
	got := p.take(now.Add(time.Millisecond))
	if len(got) != 1 || got[0].log != policyLog(101) {
		t.Fatalf("with the budget spent, took %d requests, want only the busy stream", len(got))
	}
	if w := p.budget.wait(now.Add(time.Millisecond), p.quiet()); w <= 0 || w > 100*time.Millisecond {
		t.Fatalf("next token in %v, want within 1/rate", w)
	}
	left := len(p.queue)
	p.flush()
	if got := p.take(now.Add(2 * time.Millisecond)); len(got) != left || len(p.queue) != 0 {
		t.Fatalf("after flush took %d of %d queued, %d left", len(got), left, len(p.queue))
	}
	if p.taken[takenBudget] != 2 || p.taken[takenBusy] != 1 || p.taken[takenClose] != uint64(left) {
		t.Fatalf("counted %v", p.taken)
	}
	// A stream queued twice (its previous sequencer retired) goes once per round.
	p.queueReq(policyLog(7), 1)
	p.queueReq(policyLog(7), 1)
	if got := p.take(now.Add(3 * time.Millisecond)); len(got) != 1 || len(p.queue) != 1 {
		t.Fatalf("took %d requests of one stream", len(got))
	}
}

// With a real sequencer: many quiet streams publish within the budget
// (burst + rate*elapsed, however slow the machine), every stream ends up published,
// and Close publishes what the budget still held back at once.
func TestPublishBudgetWithManyStreams(t *testing.T) {
	const (
		streams = 60
		budget  = 20
	)
	reg := prometheus.NewRegistry()
	h := newHarness(t, func(c *Config) {
		c.PublishInterval, c.PublishBudget, c.Registerer = 10*time.Millisecond, budget, reg
	})
	start := time.Now()
	results := make([][]Result, streams)
	for i := range streams {
		results[i] = h.submitN(policyLog(i), 2)
	}
	// About half the streams publish within the budget; then Close publishes the rest.
	ctx := context.Background()
	for deadline := time.Now().Add(time.Minute); h.seq.pub.takenCount(takenBudget) < streams/2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d publications within the budget after a minute", h.seq.pub.takenCount(takenBudget))
		}
	}
	quiet := h.seq.pub.takenCount(takenBudget)
	elapsed := time.Since(start)
	if bound := h.seq.pub.budget.burst + budget*elapsed.Seconds(); float64(quiet) > bound {
		t.Fatalf("%d quiet publications in %v: more than the budget's %v", quiet, elapsed, bound)
	}
	if got := gather(t, reg)["sealtrail_stream_publications_total"]; got < float64(quiet) {
		t.Fatalf("metric counts %v publications, the publisher %d", got, quiet)
	}
	t.Logf("%d of %d streams published within the budget in %v", quiet, streams, elapsed)
	for _, i := range []int{0, streams - 1} {
		h.checkLog(policyLog(i), results[i]) // proofs at once, published or not
	}
	closeCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := h.seq.Close(closeCtx); err != nil {
		t.Fatalf("close with %d streams held back by a budget of %d/s: %v", streams-int(quiet), budget, err)
	}
	unpublished, err := h.db.ListUnpublished(ctx)
	if err != nil || len(unpublished) != 0 {
		t.Fatalf("after Close: %d streams unpublished (%v)", len(unpublished), err)
	}
	for i := range streams {
		cp, err := h.db.Checkpoint(ctx, policyLog(i))
		if err != nil || cp.PublishedSize != 2 {
			t.Fatalf("stream %d: %+v, %v", i, cp, err)
		}
	}
}

// With more quiet streams due than tokens, rounds wait for a group's worth of tokens
// (budgetGroupGap) instead of taking each token as it comes, so quiet streams are
// still published many to a round, sharing its syncs, even with a short
// PublishInterval; a lone quiet stream is not kept waiting for a group.
func TestPubBudgetGroupsQuietStreams(t *testing.T) {
	const (
		interval = 20 * time.Millisecond
		rate     = DefaultPublishBudget
		streams  = 1000
	)
	p := policyPublisher(rate, interval)
	t0 := time.Unix(1_700_000_000, 0)
	for i := range streams {
		p.queueReq(policyLog(i), 1)
	}
	rounds, total := 0, 0
	for now := t0; now.Sub(t0) < 3*time.Second; now = now.Add(p.gap) {
		got := len(p.take(now))
		if got == 0 {
			continue
		}
		rounds++
		total += got
		if group := int(p.budget.group); got < group {
			t.Fatalf("round %d at %v took %d quiet streams, want at least %d", rounds, now.Sub(t0), got, group)
		}
	}
	if bound := p.budget.burst + rate*3; float64(total) > bound || total < 3*rate*9/10 {
		t.Fatalf("%d publications in 3 s at %d/s (bound %v)", total, rate, bound)
	}
	t.Logf("%d rounds, %d publications", rounds, total)

	lone := policyPublisher(rate, interval)
	lone.budget.tokens = 1.5 // less than a group
	lone.queueReq(policyLog(0), 1)
	if got := lone.take(t0); len(got) != 1 {
		t.Fatalf("a lone quiet stream waited for a group's worth of tokens")
	}
}
