package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sealtrail/sealtrail/keyring"
)

// kekOpener opens one configured KEK and returns what closes it. The openers of the
// KMS types register themselves from kek_<type>.go, each behind a build tag
// (no_awskms, no_gcpkms, no_pkcs11; pkcs11 also needs cgo), so a build need not link
// every KMS client.
type kekOpener func(ctx context.Context, c KEKConfig) (keyring.Wrapper, func(), error)

var kekOpeners = map[string]kekOpener{
	"file": func(_ context.Context, c KEKConfig) (keyring.Wrapper, func(), error) {
		k, err := keyring.LoadOrCreateKEKFile(c.File)
		return k, func() {}, err
	},
}

func (c KEKConfig) timeout() time.Duration { return ms(c.TimeoutMS) }

// openKeyring opens the configured KEKs (the current one and the previous ones) and
// returns the payload keyring over cat, the rotator that rewraps its keys, and what
// closes the KEKs.
func openKeyring(ctx context.Context, cfg KEKConfig, cat keyring.RewrapStore, store keyring.Store, logger *slog.Logger) (*keyring.Keyring, *keyring.Rotator, func(), error) {
	var closers []func()
	closeAll := func() {
		for _, c := range closers {
			c()
		}
	}
	open := func(c KEKConfig) (keyring.Wrapper, error) {
		opener, ok := kekOpeners[c.Type]
		if !ok {
			return nil, fmt.Errorf("key-encryption key: type %s is not in this build (pkcs11 needs cgo; build tags no_awskms, no_gcpkms, no_pkcs11 leave types out)", c.Type)
		}
		w, closeW, err := opener(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("key-encryption key (%s): %w", c.Type, err)
		}
		closers = append(closers, closeW)
		return w, nil
	}
	cur, err := open(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	var prev []keyring.Wrapper
	for _, p := range cfg.Previous {
		w, err := open(p)
		if err != nil {
			closeAll()
			return nil, nil, nil, fmt.Errorf("previous %w", err)
		}
		prev = append(prev, w)
	}
	kr := keyring.New(store, cur, keyring.Options{Previous: prev})
	logger.Info("key-encryption key", "current", cur.ID(), "previous", len(prev))
	rot := keyring.NewRotator(ctx, kr, cat, logger)
	// At shutdown ctx is done, so a rewrap run stops at its next row; let it stop before
	// its KEKs and the catalog close (it resumes when started again).
	return kr, rot, func() {
		wctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := rot.Wait(wctx); err != nil {
			logger.Warn("key-encryption key: a rewrap run did not stop in time", "err", err)
		}
		closeAll()
	}, nil
}
