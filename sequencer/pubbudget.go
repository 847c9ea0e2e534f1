package sequencer

import (
	"math"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
)

// DefaultPublishBudget is the default of Config.PublishBudget: stream-publications per
// second, over the whole process, of the streams that have little to publish
// (docs/performance.md, "pubbudget", for the measurements behind it).
const DefaultPublishBudget = 100

// busyBacklog is the unpublished leaves from which a stream's publication does not
// count against the budget: it writes at least one full tile and entry bundle anyway,
// so the partial objects and the note it adds are shared by hundreds of events, and
// the publications of such streams are bounded by the event rate divided by it.
const busyBacklog = tiles.TileWidth

// pubBudget is the process's publication budget, a token bucket: every publication
// of a quiet stream (less than busyBacklog leaves to publish) spends a token; tokens
// accrue at rate per second up to burst. A round takes only the quiet streams it
// has tokens for, oldest request first; the others stay queued, coalescing more
// batches. So with n quiet streams due, each is published about every
// max(PublishInterval, n/rate), and the process makes at most burst + rate*t quiet
// publications in any t seconds however many streams there are. A lone stream needs
// one token per PublishInterval, which it always has when rate*PublishInterval >= 1.
//
// Not safe for concurrent use: the publisher calls it under its mutex. Times are
// passed in, so the policy is tested with explicit times.
type pubBudget struct {
	rate   float64 // tokens per second; 0 or less: no budget
	burst  float64
	group  float64 // tokens a round of quiet streams waits for (budgetGroupGap's worth)
	tokens float64
	at     time.Time // when tokens was brought up to date; zero before first use
}

// budgetGroupGap is the least time's worth of tokens a round of quiet streams waits
// for when more quiet streams are due than the budget has tokens: without it a
// publisher woken at each new token would publish them one per round, and a round's
// three filesystem syncs would no longer be shared (with 1,000 quiet streams and a
// 20 ms PublishInterval, more rounds than streams).
const budgetGroupGap = 100 * time.Millisecond

// newPubBudget returns a budget of rate publications per second (none if rate <= 0),
// holding at most the tokens of one PublishInterval or of budgetGroupGap, whichever
// is longer (and at most one second's, at least one token).
func newPubBudget(rate float64, interval time.Duration) *pubBudget {
	group := max(1, rate*budgetGroupGap.Seconds())
	burst := max(group, rate*min(interval, time.Second).Seconds())
	return &pubBudget{rate: rate, burst: burst, group: group, tokens: burst}
}

// ready reports whether, at now, a round may take quiet streams when quiet of them
// are due: once the tokens cover them all or a group's worth (always without a
// budget).
func (b *pubBudget) ready(now time.Time, quiet int) bool {
	if !b.limited() {
		return true
	}
	b.refill(now)
	return b.tokens >= max(1, min(b.group, float64(quiet)))
}

// limited reports whether b limits anything.
func (b *pubBudget) limited() bool { return b.rate > 0 }

// refill brings the tokens up to date at now.
func (b *pubBudget) refill(now time.Time) {
	if b.at.IsZero() {
		b.at = now
		return
	}
	if d := now.Sub(b.at); d > 0 {
		b.tokens = min(b.burst, b.tokens+d.Seconds()*b.rate)
		b.at = now
	}
}

// spend takes a token at now if there is one and reports whether it did (always true
// without a budget).
func (b *pubBudget) spend(now time.Time) bool {
	if !b.limited() {
		return true
	}
	b.refill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// wait returns how long after now the budget is ready for quiet due streams (0 if it
// is, or without a budget).
func (b *pubBudget) wait(now time.Time, quiet int) time.Duration {
	if !b.limited() {
		return 0
	}
	b.refill(now)
	need := max(1, min(b.group, float64(quiet)))
	if b.tokens >= need {
		return 0
	}
	return time.Duration(math.Ceil((need - b.tokens) / b.rate * float64(time.Second)))
}
