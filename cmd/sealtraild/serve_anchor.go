package main

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"

	"github.com/sealtrail/sealtrail/anchor"
	"github.com/sealtrail/sealtrail/anchor/rekor"
	"github.com/sealtrail/sealtrail/anchor/tsa"
	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// startAnchoring starts the anchoring job in the background (unless disabled) and
// returns a function that stops it and waits for it.
func startAnchoring(ctx context.Context, cfg Config, cat db, store tiles.Store, key ed25519.PrivateKey, logger *slog.Logger) (stop func(), err error) {
	if cfg.Anchor.Disabled {
		return func() {}, nil
	}
	ac, ok := cat.(catalog.AnchorCatalog)
	if !ok {
		return nil, fmt.Errorf("anchor: the catalog %T has no tree_heads log", cat)
	}
	job, err := anchor.New(anchor.Config{Catalog: ac, Store: store, Origin: cfg.Origin, Key: key,
		Interval: cfg.Anchor.interval(), Logger: logger.With("component", "anchor")})
	if err != nil {
		return nil, err
	}
	// Publishers, in order: the first that succeeds names a head's anchorType.
	var pubs []anchor.Publisher
	for _, w := range cfg.Anchor.Witnesses {
		p, err := anchor.NewWitness(w.URL, w.Key, job.ConsistencyProof, nil)
		if err != nil {
			return nil, err
		}
		pubs = append(pubs, p)
	}
	peers := &http.Client{Timeout: cfg.Anchor.peerTimeout()}
	if r := cfg.Anchor.Rekor; r != nil {
		p, err := rekor.New(r.URL, key, peers)
		if err != nil {
			return nil, err
		}
		pubs = append(pubs, p)
	}
	if ts := cfg.Anchor.TSA; ts != nil {
		p, err := tsa.New(ts.URL, peers)
		if err != nil {
			return nil, err
		}
		pubs = append(pubs, p)
	}
	job.SetPublishers(pubs)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { job.Run(ctx) })
	return func() { cancel(); wg.Wait() }, nil
}

// printCheckpointKeys prints the tree_heads log's origin and verifier key: what a
// witness operator needs to follow every tenant of this service.
func printCheckpointKeys(out io.Writer, cfg Config, key ed25519.PrivateKey) {
	origin := tlog.TreeHeadsOrigin(cfg.Origin)
	vk, err := tlog.CheckpointVerifierKey(key.Public().(ed25519.PublicKey), origin)
	if err != nil {
		return
	}
	fmt.Fprintf(out, "tree_heads log:     %s\nWitness verifier key: %s\n(per stream: GET /api/v1/checkpoint-key?projectId=P)\n", origin, vk)
}
