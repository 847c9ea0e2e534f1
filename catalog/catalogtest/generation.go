package catalogtest

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
)

// generationCatalog is a catalog keeping a control-plane generation (control/cache.go).
type generationCatalog interface {
	ControlGeneration(ctx context.Context) (int64, error)
}

// testControlGeneration checks that the control-plane generation rises with every
// change the ingest path caches (projects, API keys, signing keys, suspensions), and
// with nothing that the ingest path itself writes (seals).
func testControlGeneration(t *testing.T, db catalog.Catalog) {
	ctx := ctxT(t)
	g, ok := db.(generationCatalog)
	if !ok {
		t.Fatalf("%T keeps no control-plane generation", db)
	}
	gen := func() int64 {
		t.Helper()
		n, err := g.ControlGeneration(ctx)
		if err != nil {
			t.Fatalf("ControlGeneration: %v", err)
		}
		return n
	}
	last := gen()
	rises := func(what string, change func() error) {
		t.Helper()
		if err := change(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := gen(); n <= last {
			t.Errorf("%s: generation %d, was %d; want it to rise", what, n, last)
		} else {
			last = n
		}
	}
	rises("CreateProject", func() error {
		_, err := db.CreateProject(ctx, catalog.Project{ID: "prj_a", Name: "A", CreatedAt: t0})
		return err
	})
	rises("SetIngestRateLimit", func() error { _, err := db.SetIngestRateLimit(ctx, "prj_a", 500); return err })
	rises("CreateAPIKey", func() error {
		_, err := db.CreateAPIKey(ctx, catalog.APIKey{ID: "key_1", ProjectID: "prj_a", Name: "ci",
			Hash: bytes.Repeat([]byte{7}, 32), Prefix: "st_live_ab", Scopes: []string{catalog.ScopeWrite}, CreatedAt: t0})
		return err
	})
	rises("RevokeAPIKey", func() error { _, err := db.RevokeAPIKey(ctx, "prj_a", "key_1", t0); return err })
	rises("CreateSigningKey", func() error {
		_, err := db.CreateSigningKey(ctx, catalog.SigningKey{ID: "sk_1", ProjectID: "prj_a", PublicKey: fmt.Sprintf("%064x", 42), CreatedAt: t0})
		return err
	})
	rises("RevokeSigningKey", func() error { _, err := db.RevokeSigningKey(ctx, "prj_a", "sk_1", t0); return err })
	if rc, ok := db.(catalog.RetentionCatalog); ok {
		rises("Suspend", func() error {
			_, err := rc.Suspend(ctx, catalog.Suspension{ProjectID: "prj_a", Reason: "unpaid", Since: t0})
			return err
		})
		rises("Unsuspend", func() error { return rc.Unsuspend(ctx, "prj_a") })
	} else {
		t.Errorf("%T is no RetentionCatalog", db)
	}

	// The ingest path's own writes leave it alone: caches stay valid under load.
	Seal(t, db, catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}, "g", 3)
	if n := gen(); n != last {
		t.Errorf("a seal moved the generation from %d to %d", last, n)
	}
	// A refused change changes nothing, the generation included.
	if _, err := db.SetIngestRateLimit(ctx, "prj_missing", 5); err == nil {
		t.Fatal("SetIngestRateLimit of a missing project succeeded")
	}
	if n := gen(); n != last {
		t.Errorf("a refused change moved the generation from %d to %d", last, n)
	}
}
