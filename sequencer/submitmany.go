package sequencer

import (
	"context"
	"errors"

	"github.com/sealtrail/sealtrail/catalog"
)

// SubmitMany seals es into log in their order (each entry's sequence is greater than
// the previous one's; other callers' events may fall between them) and returns one
// result and one error per entry, with Submit's meaning. Each entry succeeds or fails
// on its own: an entry refused with a *BusyError leaves the others queued, and a
// failed batch fails only the entries it held.
func (s *Sequencer) SubmitMany(ctx context.Context, log catalog.LogID, es []Entry) ([]Result, []error) {
	results, errs := make([]Result, len(es)), make([]error, len(es))
	if err := log.Validate(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return results, errs
	}
	ctx, span := startSubmit(ctx, log, len(es))
	defer span.End()
	waiters := make([]waiter, len(es))
	queued := make([]bool, len(es))
	for i, e := range es {
		for {
			ls, err := s.logSequencer(log)
			if err == nil {
				waiters[i], err = ls.enqueue(ctx, e)
				if errors.Is(err, errRetired) {
					continue // the sequencer went idle between lookup and enqueue
				}
			}
			errs[i], queued[i] = err, err == nil
			break
		}
	}
	for i, w := range waiters {
		if queued[i] {
			results[i], errs[i] = w.wait(ctx)
		}
	}
	return results, errs
}
