package control

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
)

// countingCatalog counts the catalog reads the ingest path's caches make.
type countingCatalog struct {
	*sqlite.DB
	keyReads, genReads, limitReads atomic.Int64
	genErr                         atomic.Bool
}

func (c *countingCatalog) APIKeyByHash(ctx context.Context, hash []byte) (catalog.APIKey, error) {
	c.keyReads.Add(1)
	return c.DB.APIKeyByHash(ctx, hash)
}

func (c *countingCatalog) Project(ctx context.Context, id string) (catalog.Project, error) {
	c.limitReads.Add(1)
	return c.DB.Project(ctx, id)
}

func (c *countingCatalog) ControlGeneration(ctx context.Context) (int64, error) {
	c.genReads.Add(1)
	if c.genErr.Load() {
		return 0, errors.New("catalog unreachable")
	}
	return c.DB.ControlGeneration(ctx)
}

// TestCacheReadsOneRowASecond: a replica serving many projects re-reads nothing while
// the control-plane generation stands still (one generation read a second, whatever
// the number of keys), still refuses a key another replica revoked within a second,
// and uses no cached value while the generation cannot be read.
func TestCacheReadsOneRowASecond(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx
	const projects = 50
	var tokens []string
	var keyIDs, projectIDs []string
	for i := range projects {
		p := e.project(fmt.Sprintf("p%d", i))
		token, k, err := e.svc.CreateAPIKey(ctx, operator, p.ID, "", []string{catalog.ScopeWrite}, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		tokens, keyIDs, projectIDs = append(tokens, token), append(keyIDs, k.ID), append(projectIDs, p.ID)
	}

	cc := &countingCatalog{DB: e.db}
	var mu sync.Mutex
	clock := time.Now()
	replica := New(cc, e.seq, nil)
	replica.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	useAll := func() {
		t.Helper()
		for i, token := range tokens {
			if _, err := replica.Authenticate(ctx, token); err != nil {
				t.Fatalf("Authenticate key %d: %v", i, err)
			}
			if _, err := replica.IngestRateLimit(ctx, projectIDs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	useAll()
	if n := cc.keyReads.Load(); n != projects {
		t.Fatalf("first use read %d keys, want %d", n, projects)
	}
	for range 5 {
		advance(time.Second)
		useAll()
	}
	if k, l, g := cc.keyReads.Load(), cc.limitReads.Load(), cc.genReads.Load(); k != projects || l != projects || g != 6 {
		t.Fatalf("after 5 s of use: %d key reads, %d project reads, %d generation reads; want %d, %d, 6", k, l, g, projects, projects)
	}

	// Another replica (e.svc) revokes a key: this one refuses it within a second,
	// and then reads every key once again.
	if _, err := e.svc.RevokeAPIKey(ctx, operator, projectIDs[0], keyIDs[0]); err != nil {
		t.Fatal(err)
	}
	advance(time.Second)
	if _, err := replica.Authenticate(ctx, tokens[0]); !errors.Is(err, ErrBadKey) {
		t.Fatalf("a key revoked elsewhere a second ago: %v, want ErrBadKey", err)
	}
	for _, token := range tokens[1:] {
		if _, err := replica.Authenticate(ctx, token); err != nil {
			t.Fatal(err)
		}
	}
	if n := cc.keyReads.Load(); n != 2*projects {
		t.Fatalf("after the revocation: %d key reads, want %d", n, 2*projects)
	}

	// A rate-limit override set elsewhere applies within a second too.
	if _, err := e.svc.SetIngestRateLimit(ctx, operator, projectIDs[1], 77); err != nil {
		t.Fatal(err)
	}
	advance(time.Second)
	if n, err := replica.IngestRateLimit(ctx, projectIDs[1]); err != nil || n != 77 {
		t.Fatalf("IngestRateLimit after an override elsewhere = %d, %v; want 77", n, err)
	}

	// While the generation cannot be read, every lookup reads the catalog.
	cc.genErr.Store(true)
	advance(time.Second)
	before := cc.keyReads.Load()
	for _, token := range tokens[1:4] {
		if _, err := replica.Authenticate(ctx, token); err != nil {
			t.Fatal(err)
		}
	}
	if n := cc.keyReads.Load() - before; n != 3 {
		t.Fatalf("with the generation unreadable, 3 lookups read %d keys, want 3", n)
	}
}

// TestCacheBounded: past maxCached entries a cache drops what is stale, then all.
func TestCacheBounded(t *testing.T) {
	c := newTTLCache[int](time.Second)
	now := time.Now()
	for i := range maxCached {
		c.put(fmt.Sprint(i), i, 1, now)
	}
	c.put("new", 1, 2, now) // epoch 2: every earlier entry is stale and dropped
	if len(c.m) != 1 {
		t.Fatalf("%d entries after a put past the bound in a new epoch, want 1", len(c.m))
	}
	for i := range maxCached - 1 {
		c.put(fmt.Sprint(i), i, 2, now)
	}
	if v, ok := c.get("5", 2, now.Add(time.Hour)); !ok || v != 5 || len(c.m) != maxCached {
		t.Fatalf("an entry of the current epoch an hour later = %d, %v (%d entries); want it kept", v, ok, len(c.m))
	}
	if _, ok := c.get("5", 0, now.Add(time.Hour)); ok {
		t.Fatal("an entry of another epoch was returned")
	}
	c.put("one more", 1, 2, now) // all current: the cache starts again
	if len(c.m) != 1 {
		t.Fatalf("%d entries after a put past the bound, want 1", len(c.m))
	}
}
