package tiles

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/tlog"
	"golang.org/x/sync/errgroup"
)

// A GroupPublisher is a BatchPublisher that can publish many logs at once:
// CreateAllThenPutAll is CreateAll of objs, then, only if that succeeded, Put of every
// object of puts, each replaced only once every object of objs is durable. The
// filesystem store makes the whole round durable with the syncs of one CreateAll and
// one more for all the replacements, however many logs it holds. [PublishGroup] uses
// it when the store has it.
type GroupPublisher interface {
	BatchPublisher
	CreateAllThenPutAll(ctx context.Context, objs []Object, a Attrs, puts []Object, pa Attrs) error
}

// A Publication is one log's part of a [PublishGroup] round: the arguments of
// [Writer.Publish] for its Writer.
type Publication struct {
	Writer   *Writer
	OldSize  uint64
	LeafData [][]byte
	Root     tlog.Hash
	Note     []byte
}

// PublishGroup is Writer.Publish for each of pubs, whose Writers must all write to
// store s, in one round: every log's objects are computed and checked first (as
// Materialize does), then all of them are written together and, once they are
// durable, every log's checkpoint note: with one CreateAllThenPutAll if s is a
// GroupPublisher, else with each log's own Publish writes, a few logs at once. So a
// log's note is never written before its own tiles and entry bundles are durable.
// The Writers must be distinct.
//
// It returns one error per publication, nil where it succeeded. One log's failure
// (a mismatch, a missing edge, a conflicting object) does not fail the others: a
// conflicting object, which CreateAll reports before writing anything, takes its log
// out of the round and the rest is written again. A store error fails every log it
// touched; as after a failed Publish, calling PublishGroup again completes the work.
func PublishGroup(ctx context.Context, s Store, pubs []Publication) []error {
	errs := make([]error, len(pubs))
	plans := make([]*plan, len(pubs))
	// Each log's objects, a few logs at once (a Writer without its edge reads it).
	var g errgroup.Group
	g.SetLimit(writeParallelism)
	for i, p := range pubs {
		if len(p.Note) == 0 {
			errs[i] = fmt.Errorf("tiles: publish %s: empty checkpoint note", p.Writer.prefix)
			continue
		}
		g.Go(func() error {
			plans[i], errs[i] = p.Writer.prepare(ctx, p.OldSize, p.LeafData, p.Root)
			return nil
		})
	}
	_ = g.Wait() // each log's error is in errs
	gp, ok := s.(GroupPublisher)
	if !ok {
		g, gctx := errgroup.WithContext(context.WithoutCancel(ctx))
		g.SetLimit(writeParallelism)
		for i, pl := range plans {
			if pl == nil {
				continue
			}
			w := pubs[i].Writer
			g.Go(func() error {
				if err := w.write(gctx, pl.objs, pubs[i].Note); err != nil {
					errs[i] = err
					return nil
				}
				w.done(ctx, pl)
				return nil
			})
		}
		_ = g.Wait() // each publication's error is in errs
		return errs
	}
	for {
		var objs, notes []Object
		var live []int
		for i, pl := range plans {
			if pl == nil || errs[i] != nil {
				continue
			}
			w := pubs[i].Writer
			live = append(live, i)
			for _, o := range pl.objs {
				objs = append(objs, Object{Key: w.prefix.Key(o.path), Data: o.data})
			}
			notes = append(notes, Object{Key: w.prefix.Key(CheckpointPath), Data: pubs[i].Note})
		}
		if len(live) == 0 {
			return errs
		}
		err := gp.CreateAllThenPutAll(ctx, objs, ImmutableAttrs, notes, CheckpointAttrs)
		if err == nil {
			for _, i := range live {
				pubs[i].Writer.done(ctx, plans[i])
			}
			return errs
		}
		// A conflict is the one log's fork: out of the round, the rest goes again.
		var ce *ConflictError
		if errors.As(err, &ce) {
			if i := ownerOf(pubs, live, ce.Key); i >= 0 {
				errs[i] = fmt.Errorf("tiles: publish %s: %w", pubs[i].Writer.prefix, err)
				continue
			}
		}
		for _, i := range live {
			errs[i] = fmt.Errorf("tiles: publish %s in a round of %d logs: %w", pubs[i].Writer.prefix, len(live), err)
		}
		return errs
	}
}

// ownerOf returns the index, among live, of the publication whose prefix holds key,
// or -1.
func ownerOf(pubs []Publication, live []int, key string) int {
	for _, i := range live {
		if strings.HasPrefix(key, string(pubs[i].Writer.prefix)) {
			return i
		}
	}
	return -1
}
