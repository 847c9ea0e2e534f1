package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/retention"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tiles"
)

// startRetention starts the retention job in the background until ctx ends, unless
// the configuration disables it.
func startRetention(ctx context.Context, cfg RetentionConfig, cat db, seq *sequencer.Sequencer, ctl *control.Service,
	kr *keyring.Keyring, store tiles.Store, logger *slog.Logger) error {
	if cfg.Disabled {
		return nil
	}
	rc, ok := cat.(retention.Catalog)
	if !ok {
		return fmt.Errorf("retention: the catalog %T has no retention methods", cat)
	}
	job, err := retention.New(retention.Config{Catalog: rc, Reader: seq, Auditor: ctl, Keyring: kr, Store: store,
		Interval: cfg.interval(), Logger: logger})
	if err != nil {
		return err
	}
	go job.Run(ctx)
	return nil
}
