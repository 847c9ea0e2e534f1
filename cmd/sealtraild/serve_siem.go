package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/siem"
)

// startSIEM returns the operator side of SIEM streaming and starts this replica's
// runner (unless disabled); stop ends the runner and waits for it, before the
// sequencer closes.
// The KEK rotation (rot) rewraps and counts the destinations' sealed secrets too.
func startSIEM(cfg Config, cat db, src siem.Source, ctl *control.Service, logger *slog.Logger, reg prometheus.Registerer, kek keyring.Wrapper, rot *keyring.Rotator) (*siem.Admin, func(), error) {
	sc, ok := cat.(catalog.SIEMCatalog)
	if !ok {
		return nil, nil, fmt.Errorf("catalog %T has no SIEM destinations", cat)
	}
	rot.AddSecrets(siem.Secrets{Catalog: sc})
	admin := siem.NewAdmin(sc, ctl, src, kek)
	if cfg.SIEMDisabled {
		return admin, func() {}, nil
	}
	r, err := siem.NewRunner(siem.RunnerConfig{Catalog: sc, Source: src, KEK: kek, Poll: ms(cfg.SIEMPollMS),
		LeaseTTL: ms(cfg.SIEMLeaseTTLMS), BatchSize: cfg.SIEMBatchSize, MaxAttempts: cfg.SIEMMaxAttempts,
		BackoffMax: ms(cfg.SIEMBackoffMaxMS), Logger: logger, Registerer: reg})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.Run(ctx) })
	return admin, func() { cancel(); wg.Wait() }, nil
}
