package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/internal/loadtest"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		vs   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{5, 1, 3}, 3}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(c.vs); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.vs, got, c.want)
		}
	}
}

// TestRatios checks that each ratio pairs rows of the same round only, and that with
// several rounds it prints their median and each round's value.
func TestRatios(t *testing.T) {
	rate := func(round int, system, name string, perSec int, p99 time.Duration) row {
		return row{round: round, system: system, name: name,
			res: loadtest.Result{Requests: perSec, Events: perSec, Elapsed: time.Second, P99: p99}}
	}
	var tb table
	for round, speed := range []int{1, 2, 3} { // the machine speeds up from round to round
		r := round + 1
		tb.rows = append(tb.rows,
			rate(r, "trivial handler", "single, 1 stream, c=200", 10000*speed, 10*time.Millisecond),
			rate(r, "Tessera POSIX", "single, 1 stream, c=200", 1000*speed, 20*time.Millisecond),
			rate(r, "Sealtrail embedded", "single, 1 project, c=200", 6000*speed, 15*time.Millisecond),
			rate(r, "Sealtrail PostgreSQL", "single, 1 project, c=200", 4500*speed, 15*time.Millisecond),
			rate(r, "Sealtrail embedded", "single, 1000 projects, c=200", 3000*speed, 30*time.Millisecond))
	}
	tb.rows = append(tb.rows, rate(3, "Sealtrail embedded", "single, 1 project, c=1000", 0, 0)) // nothing acknowledged
	var out strings.Builder
	tb.ratios(&out, 3)
	for _, want := range []string{
		"Sealtrail embedded, one project, c=200: rate, × the trivial handler's median 0.60× of 3 rounds (0.60×, 0.60×, 0.60×)\n",
		"Sealtrail embedded, one project, c=200: p99, × the trivial handler's median 1.5× of 3 rounds (1.5×, 1.5×, 1.5×)\n",
		"Sealtrail embedded, one project, c=200: rate, × Tessera's median 6.00× of 3 rounds",
		"Sealtrail PostgreSQL, one project, c=200: rate, % of the embedded default's median 75% of 3 rounds (75%, 75%, 75%)\n",
		"Sealtrail embedded, 1000 projects, c=200: rate, % of one project's median 50% of 3 rounds",
		"Sealtrail embedded, 1000 projects, c=200: p99, × one project's median 2.0× of 3 rounds",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("ratios lack %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "c=1000") {
		t.Errorf("a case without acknowledged requests has ratios:\n%s", out.String())
	}
	out.Reset()
	tb.rows = tb.rows[:5]
	tb.ratios(&out, 1)
	if want := "Sealtrail embedded, one project, c=200: rate, × the trivial handler's 0.60×\n"; !strings.Contains(out.String(), want) {
		t.Errorf("one round: ratios lack %q:\n%s", want, out.String())
	}
}

// TestWaitIdle: waitIdle returns once the share used between two reads is below the
// bound, and errBusy with the last share when the limit passes first.
func TestWaitIdle(t *testing.T) {
	var reads int64
	busyThenIdle := func() (int64, int64, error) {
		reads++
		if reads <= 2 {
			return reads * 50, reads * 100, nil // half busy
		}
		return 100 + reads, reads * 100, nil // 1% busy
	}
	if used, err := waitIdle(context.Background(), time.Minute, 0.1, busyThenIdle); err != nil || used >= 0.1 || reads != 3 {
		t.Fatalf("busy then idle: %v, %v after %d reads", used, err, reads)
	}
	always := func() (int64, int64, error) { reads++; return reads * 90, reads * 100, nil }
	if used, err := waitIdle(context.Background(), 0, 0.1, always); !errors.Is(err, errBusy) || used != 0.9 {
		t.Fatalf("always busy: %v, %v; want 0.9, errBusy", used, err)
	}
}
