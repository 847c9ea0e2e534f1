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
	for {
		ls, err := s.logSequencer(log)
		if err == nil {
			err = ls.enqueueMany(ctx, es, waiters, errs)
			if errors.Is(err, errRetired) {
				continue // the sequencer went idle between lookup and enqueue
			}
		}
		if err != nil {
			for i := range errs {
				errs[i] = err
			}
			return results, errs
		}
		break
	}
	for i, w := range waiters {
		if errs[i] == nil {
			results[i], errs[i] = w.wait(ctx)
		}
	}
	return results, errs
}

// enqueueMany is enqueue for each of es under one hold of the lock, with the waiter
// or the error of each in waiters and errs. It returns an error, and queues nothing,
// when ls takes no entry at all (retired, stopped or draining); otherwise an entry
// beyond MaxPending gets a *BusyError, as alone.
func (ls *logSequencer) enqueueMany(ctx context.Context, es []Entry, waiters []waiter, errs []error) error {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if err := ls.admitting(); err != nil {
		return err
	}
	for i := range es {
		waiters[i], errs[i] = ls.add(ctx, es[i], len(es)-i)
	}
	ls.signal()
	return nil
}
