package sequencer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// Build parallelism: at most maxBuildWorkers goroutines, each with at least
// minPerBuildWorker entries.
const (
	maxBuildWorkers   = 4
	minPerBuildWorker = 128
)

// inParallel runs f over [0, n) cut into contiguous parts, one goroutine each (a
// single part for a small n), and returns their errors joined.
func inParallel(n int, f func(lo, hi int) error) error {
	workers := min(runtime.GOMAXPROCS(0), maxBuildWorkers, 1+n/minPerBuildWorker)
	if workers == 1 {
		return f(0, n)
	}
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*n/workers, (w+1)*n/workers
		wg.Go(func() { errs[w] = f(lo, hi) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// encryptPayloads encrypts the payload of each entry newAt[k] of p, with its nonce
// nonces[k] in front (the plaintext of a payload ciphertext), into bundle's records,
// whose leaves (leaves, and their data in the records) buildEntries made, and returns
// the bundle encoded: version 2, each leaf in its compact form (tiles.PayloadLayout).
// With a keyring that has Sealers, every ciphertext's length is known beforehand: the
// bundle is laid out first and each payload encrypted straight into its place, so
// neither the ciphertexts nor the encoding are copied; the records' ciphertexts then
// alias the encoding.
func (ls *logSequencer) encryptPayloads(ctx context.Context, p *pool, newAt []int, ts time.Time, nonces []tlog.Nonce,
	leaves []tlog.Leaf, bundle *tiles.PayloadBundle) ([]byte, error) {
	cfg := &ls.s.cfg
	recs := bundle.Records
	aad := func(k int) []byte { return payloadAAD(ls.log, bundle.First+uint64(k), p.results[newAt[k]].ID) }
	layout := func(ctLen func(k int) int) (*tiles.PayloadLayout, error) {
		ctLens := make([]int, len(recs))
		for k := range recs {
			ctLens[k] = ctLen(k)
		}
		return tiles.NewPayloadLayout(bundle.First, ls.log.ProjectID, string(ls.log.Stream), leaves, ctLens)
	}
	bk, ok := cfg.Keyring.(batchKeyring)
	if !ok {
		err := inParallel(len(recs), func(lo, hi int) error {
			for k := lo; k < hi; k++ {
				payload := p.entries[newAt[k]].Payload
				plain := append(append(make([]byte, 0, tlog.NonceSize+len(payload)), nonces[k][:]...), payload...)
				ct, err := cfg.Keyring.Seal(ctx, ls.log, ts, plain, aad(k))
				if err != nil {
					return fmt.Errorf("encrypt payload: %w", err)
				}
				recs[k].Ciphertext = ct
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		l, err := layout(func(k int) int { return len(recs[k].Ciphertext) })
		if err != nil {
			return nil, err
		}
		for k := range recs {
			recs[k].Ciphertext = append(l.Ciphertext(k), recs[k].Ciphertext...)
		}
		return l.Bytes(), nil
	}
	sealer, err := bk.SealerAt(ctx, ls.log, ts)
	if err != nil {
		return nil, fmt.Errorf("encrypt payloads: %w", err)
	}
	l, err := layout(func(k int) int { return sealer.SealedLen(tlog.NonceSize + len(p.entries[newAt[k]].Payload)) })
	if err != nil {
		return nil, err
	}
	err = inParallel(len(recs), func(lo, hi int) error {
		for k := lo; k < hi; k++ {
			slot := l.Ciphertext(k)
			ct, err := sealer.SealPrefixedTo(slot, nonces[k][:], p.entries[newAt[k]].Payload, aad(k))
			if err != nil {
				return fmt.Errorf("encrypt payload: %w", err)
			}
			if len(ct) != cap(slot) {
				return fmt.Errorf("encrypt payload: ciphertext of %d bytes, %d expected", len(ct), cap(slot))
			}
			recs[k].Ciphertext = ct
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return l.Bytes(), nil
}
