package tiles

import (
	"context"
	"fmt"
)

// PublishCheckpoint writes the signed checkpoint note of the log under p, replacing
// the previous one (Store.Put, no-cache). The caller signs it (tlog.SignCheckpoint)
// for a tree whose tiles are already materialized, so a mirror that reads the
// checkpoint finds every tile it names.
//
// Concurrent publications are last-writer-wins; a caller that publishes outside the
// log's lock may briefly put an older checkpoint back, which mirrors see as a log that
// has not grown, never as a fork.
func PublishCheckpoint(ctx context.Context, s Store, p Prefix, note []byte) error {
	if err := s.Put(ctx, p.Key(CheckpointPath), note, CheckpointAttrs); err != nil {
		return fmt.Errorf("tiles: publish checkpoint of %s: %w", p, err)
	}
	return nil
}

// ReadCheckpoint returns the signed checkpoint note of the log under p, unverified;
// open it with tlog.OpenCheckpoint. A log without one gives an error wrapping
// ErrNotFound.
func ReadCheckpoint(ctx context.Context, s Store, p Prefix) ([]byte, error) {
	b, err := s.Get(ctx, p.Key(CheckpointPath))
	if err != nil {
		return nil, fmt.Errorf("tiles: read checkpoint of %s: %w", p, err)
	}
	return b, nil
}
