package keyring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
)

// KEK rotation: the keyring is started with the new KEK as its current one and the old
// one in Options.Previous. New data keys are wrapped by the new KEK at once; Rewrap
// moves the existing ones, one row at a time, while the service keeps serving. Once
// no live key names the old KEK, it can be dropped from the configuration (and
// disabled in the KMS). See docs/keyring.md.

// RewrapStore is what Rewrap needs of the catalog; both catalog drivers provide it.
type RewrapStore interface {
	// DataKeysNotWrappedBy returns up to limit live (not destroyed) data keys whose
	// KEK id is not kekID, in (project, stream, epoch) order, after the key of after
	// (the zero DataKey: from the start).
	DataKeysNotWrappedBy(ctx context.Context, kekID string, after catalog.DataKey, limit int) ([]catalog.DataKey, error)
	// RewrapDataKey replaces the wrapped bytes and KEK id of old's row with wrapped and
	// kekID, only if the row is still live, has old's key id and is still wrapped by
	// old.KEKID. It reports whether it replaced them: a key destroyed meanwhile stays
	// destroyed, and a row another replica rewrapped first is left alone.
	RewrapDataKey(ctx context.Context, old catalog.DataKey, kekID string, wrapped []byte) (bool, error)
	// CountDataKeysByKEK returns the number of live data keys per KEK id.
	CountDataKeysByKEK(ctx context.Context) (map[string]int64, error)
}

// RewrapStats counts what one Rewrap run did.
type RewrapStats struct {
	// Rewrapped keys (and other secrets, SecretOwner) are now wrapped by the current KEK.
	Rewrapped int64 `json:"rewrapped"`
	// Skipped keys and secrets changed under the run (destroyed or deleted, or
	// rewrapped by another replica).
	Skipped int64 `json:"skipped"`
}

// rewrapPage is how many rows Rewrap reads at a time.
const rewrapPage = 256

// ErrRewrap marks a Rewrap stopped by a key it cannot move (wrapped by a KEK this
// keyring does not have, or a KMS failure); running it again resumes.
var ErrRewrap = errors.New("keyring: rewrap stopped")

// Rewrap rewraps every live data key not wrapped by the current KEK: unwrap with the
// KEK that wrapped it (the current one or one of Options.Previous), wrap with the
// current one under the same binding, and replace the row only if it did not change
// meanwhile. The data key itself never changes, so ciphertexts, caches and other
// replicas are unaffected. It is idempotent: a run stopped by a crash or an error is
// resumed by running it again, and two replicas running it at once do each row once.
// progress, if not nil, is called after each page.
func (k *Keyring) Rewrap(ctx context.Context, store RewrapStore, progress func(RewrapStats)) (RewrapStats, error) {
	var st RewrapStats
	cur := k.kek.ID()
	var after catalog.DataKey
	for {
		rows, err := store.DataKeysNotWrappedBy(ctx, cur, after, rewrapPage)
		if err != nil {
			return st, fmt.Errorf("%w: list data keys: %w", ErrRewrap, err)
		}
		if len(rows) == 0 {
			return st, nil
		}
		for _, row := range rows {
			secret, err := k.unwrap(ctx, row)
			if err != nil {
				return st, fmt.Errorf("%w: %w", ErrRewrap, err)
			}
			wrapped, err := k.kek.Wrap(ctx, secret, wrapAD(row.Log, row.Epoch, row.KeyID))
			clear(secret)
			if err != nil {
				return st, fmt.Errorf("%w: wrap %s %s: %w", ErrRewrap, row.Log, row.Epoch, err)
			}
			// A crash here leaves the row under its old KEK: the next run does it again.
			ok, err := store.RewrapDataKey(ctx, row, cur, wrapped)
			if err != nil {
				return st, fmt.Errorf("%w: store %s %s: %w", ErrRewrap, row.Log, row.Epoch, err)
			}
			if ok {
				st.Rewrapped++
			} else {
				st.Skipped++
			}
		}
		after = rows[len(rows)-1]
		if progress != nil {
			progress(st)
		}
	}
}

// kekIDs lists the KEKs this keyring can unwrap with, for messages.
func (k *Keyring) kekIDs() string {
	return strings.Join(slices.Sorted(func(yield func(string) bool) {
		for id := range k.unwrappers {
			if !yield(id) {
				return
			}
		}
	}), ", ")
}

// KEKID returns the ID of the current KEK, which wraps new data keys.
func (k *Keyring) KEKID() string { return k.kek.ID() }

// RotationStatus is the state of KEK rotation as one replica sees it.
type RotationStatus struct {
	// CurrentKEK wraps new keys; Rewrap moves the others to it.
	CurrentKEK string `json:"currentKek"`
	// PreviousKEKs are the KEKs this replica can still unwrap with.
	PreviousKEKs []string `json:"previousKeks"`
	// Keys counts the live data keys per KEK id, from the catalog.
	Keys map[string]int64 `json:"keys"`
	// Secrets counts the other secrets sealed by each KEK (the SIEM destinations'),
	// from the catalog.
	Secrets map[string]int64 `json:"secrets"`
	// Remaining is the number of live keys and secrets not yet under CurrentKEK; at 0
	// the previous KEKs are no longer needed.
	Remaining int64 `json:"remaining"`
	// Running reports whether this replica is rewrapping now; the rest describes its
	// last run (StartedAt zero: none since it started).
	Running    bool        `json:"running"`
	StartedAt  time.Time   `json:"startedAt,omitzero"`
	FinishedAt time.Time   `json:"finishedAt,omitzero"`
	Last       RewrapStats `json:"last"`
	Error      string      `json:"error,omitempty"`
}

// Rotator runs Rewrap in the background, one run at a time per replica, and reports
// its progress. Its methods may be called concurrently.
type Rotator struct {
	ctx    context.Context // the service's: a run stops with it
	kr     *Keyring
	store  RewrapStore
	logger *slog.Logger

	mu     sync.Mutex // guards the fields below
	owners []SecretOwner
	status RotationStatus
	done   chan struct{} // closed when the current run ends; nil before the first
}

// NewRotator returns a Rotator whose runs last at most as long as ctx.
func NewRotator(ctx context.Context, kr *Keyring, store RewrapStore, logger *slog.Logger) *Rotator {
	if logger == nil {
		logger = slog.Default()
	}
	return &Rotator{ctx: ctx, kr: kr, store: store, logger: logger}
}

// SecretOwner holds secrets other than data keys sealed by the KEK (the SIEM
// destinations' tokens and webhook secrets). A Rotator's runs rewrap them after the
// data keys, and its status counts them, so that Remaining reaches 0 only when the
// previous KEKs open nothing any more.
type SecretOwner interface {
	// RewrapSecrets reseals under kek's current KEK every secret sealed by another
	// KEK, replacing each only if it did not change meanwhile; idempotent, like
	// Rewrap. A secret sealed by a KEK that kek does not have stops it with ErrRewrap.
	RewrapSecrets(ctx context.Context, kek *KEKSet) (RewrapStats, error)
	// CountSecretsByKEK returns the number of sealed secrets per KEK id.
	CountSecretsByKEK(ctx context.Context) (map[string]int64, error)
}

// AddSecrets makes o's secrets part of every later run and status.
func (r *Rotator) AddSecrets(o SecretOwner) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.owners = append(r.owners, o)
}

// Start begins a rewrap run unless one is running; it reports whether it started one.
func (r *Rotator) Start() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.status.Running {
		return false
	}
	r.status.Running, r.status.StartedAt, r.status.FinishedAt = true, r.kr.now(), time.Time{}
	r.status.Last, r.status.Error = RewrapStats{}, ""
	done := make(chan struct{})
	r.done = done
	owners := slices.Clone(r.owners)
	go func() {
		defer close(done)
		r.logger.Info("keyring: rewrapping data keys", slog.String("kek", r.kr.KEKID()))
		st, err := r.kr.Rewrap(r.ctx, r.store, func(st RewrapStats) {
			r.mu.Lock()
			r.status.Last = st
			r.mu.Unlock()
		})
		for _, o := range owners {
			if err != nil {
				break
			}
			var more RewrapStats
			more, err = o.RewrapSecrets(r.ctx, r.kr.KEKs())
			st.Rewrapped, st.Skipped = st.Rewrapped+more.Rewrapped, st.Skipped+more.Skipped
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.status.Running, r.status.FinishedAt, r.status.Last = false, r.kr.now(), st
		if err != nil {
			r.status.Error = err.Error()
			r.logger.Error("keyring: rewrap stopped", slog.Any("err", err), slog.Int64("rewrapped", st.Rewrapped))
			return
		}
		r.logger.Info("keyring: rewrap finished", slog.Int64("rewrapped", st.Rewrapped), slog.Int64("skipped", st.Skipped))
	}()
	return true
}

// Wait blocks until the current run (if any) ends or ctx does.
func (r *Rotator) Wait(ctx context.Context) error {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Status returns this replica's run and the catalog's count of keys per KEK.
func (r *Rotator) Status(ctx context.Context) (RotationStatus, error) {
	counts, err := r.store.CountDataKeysByKEK(ctx)
	if err != nil {
		return RotationStatus{}, fmt.Errorf("keyring: rotation status: %w", err)
	}
	r.mu.Lock()
	st, owners := r.status, slices.Clone(r.owners)
	r.mu.Unlock()
	secrets := map[string]int64{}
	for _, o := range owners {
		n, err := o.CountSecretsByKEK(ctx)
		if err != nil {
			return RotationStatus{}, fmt.Errorf("keyring: rotation status: %w", err)
		}
		for id, c := range n {
			secrets[id] += c
		}
	}
	st.CurrentKEK, st.Keys, st.Secrets, st.PreviousKEKs = r.kr.KEKID(), counts, secrets, []string{}
	for id := range r.kr.unwrappers {
		if id != st.CurrentKEK {
			st.PreviousKEKs = append(st.PreviousKEKs, id)
		}
	}
	slices.Sort(st.PreviousKEKs)
	for _, m := range []map[string]int64{counts, secrets} {
		for id, n := range m {
			if id != st.CurrentKEK {
				st.Remaining += n
			}
		}
	}
	return st, nil
}
