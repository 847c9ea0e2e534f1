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

// idCache maps the ids of events looked up recently to their sequences: a proof by
// event id asked again (a client re-checking its receipt, an auditor's tool going over
// a list) costs no catalog query. A committed event's sequence never changes, so
// entries never go stale; only ids the catalog found are added. Ids are not added at
// commit: an LRU insertion costs about 0.6 µs, which every ingested event would pay
// for the few whose proof is asked (docs/performance.md, "proofs3").
type idCache struct{ c *lru.Cache[idKey, uint64] }

func newIDCache() *idCache {
	c, _ := lru.New[idKey, uint64](idCacheSize) // only fails for a size <= 0
	return &idCache{c: c}
}

// EventSequence returns the sequence of the committed event id of log, or an error
// wrapping catalog.ErrNotFound: from memory for an id looked up recently, else from
// the catalog's id index.
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
