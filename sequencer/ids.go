package sequencer

import (
	"context"
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sealtrail/sealtrail/catalog"
)

// idCacheSize bounds the event ids whose sequences the process keeps (about 100
// bytes each).
const idCacheSize = 1 << 16

// idKey names an event: ids are unique per project-stream.
type idKey struct {
	log catalog.LogID
	id  string
}

// idCache maps the ids of events to their sequences: those this process committed
// last (an inclusion proof by event id mostly asks for an event just acknowledged)
// and those looked up since. A committed event's sequence never changes, so entries
// never go stale; only committed events are added.
type idCache struct{ c *lru.Cache[idKey, uint64] }

func newIDCache() *idCache {
	c, _ := lru.New[idKey, uint64](idCacheSize) // only fails for a size <= 0
	return &idCache{c: c}
}

// add records the events of a committed batch of log.
func (c *idCache) add(log catalog.LogID, events []catalog.Event) {
	for i := range events {
		c.c.Add(idKey{log, events[i].ID}, events[i].Sequence)
	}
}

// EventSequence returns the sequence of the committed event id of log, or an error
// wrapping catalog.ErrNotFound: from memory for an event this process committed or
// looked up recently, else from the catalog's id index.
func (s *Sequencer) EventSequence(ctx context.Context, log catalog.LogID, id string) (uint64, error) {
	if seq, ok := s.ids.c.Get(idKey{log, id}); ok {
		return seq, nil
	}
	seq, err := s.cfg.Catalog.EventSequence(ctx, log, id)
	if err != nil {
		return 0, fmt.Errorf("sequencer: %w", err)
	}
	s.ids.c.Add(idKey{log, id}, seq)
	return seq, nil
}
