package sequencer

import (
	"fmt"
	"testing"

	"github.com/sealtrail/sealtrail/tiles"
)

// testBundle returns a bundle of n records of size bytes of ciphertext each.
func testBundle(n, size int) *tiles.PayloadBundle {
	b := &tiles.PayloadBundle{First: 1, Records: make([]tiles.PayloadRecord, n)}
	for i := range b.Records {
		b.Records[i] = tiles.PayloadRecord{LeafData: make([]byte, 100), Ciphertext: make([]byte, size)}
	}
	return b
}

func TestPayloadCacheBytes(t *testing.T) {
	one := testBundle(10, 1000)
	size := bundleSize(one)
	if want := payloadCacheBundleOverhead + 10*(payloadCacheRecordOverhead+1100); size != want {
		t.Fatalf("bundleSize = %d, want %d", size, want)
	}
	c := newPayloadCache(5*size + size/2) // room for five
	for i := range 8 {
		c.add(fmt.Sprint(i), testBundle(10, 1000))
		if c.bytes > c.limit {
			t.Fatalf("after %d adds the cache holds %d bytes, more than its %d", i+1, c.bytes, c.limit)
		}
	}
	if c.c.Len() != 5 || c.bytes != 5*size {
		t.Fatalf("cache holds %d bundles of %d bytes, want 5 of %d", c.c.Len(), c.bytes, 5*size)
	}
	for i := range 8 {
		if _, ok := c.get(fmt.Sprint(i)); ok != (i >= 3) {
			t.Errorf("bundle %d kept: %v, want %v (the least recently used go first)", i, ok, i >= 3)
		}
	}
	// A get makes a bundle recent: 3 stays when the next add drops one.
	if _, ok := c.get("3"); !ok {
		t.Fatal("bundle 3 missing")
	}
	c.add("8", testBundle(10, 1000))
	if _, ok := c.get("3"); !ok {
		t.Error("the bundle just read was dropped")
	}
	if _, ok := c.get("4"); ok {
		t.Error("the least recently used bundle was kept")
	}
	// Replacing an entry charges the new bundle, not both.
	c.add("8", testBundle(1, 1000))
	if want := 4*size + bundleSize(testBundle(1, 1000)); c.bytes != want {
		t.Errorf("after a replacement the cache holds %d bytes, want %d", c.bytes, want)
	}
	// A bundle larger than the whole bound is not kept, and drops an older copy.
	c.add("8", testBundle(100, 1000))
	if _, ok := c.get("8"); ok {
		t.Error("a bundle over the bound was kept")
	}
	if c.bytes != 4*size || c.c.Len() != 4 {
		t.Errorf("after the refused bundle: %d bundles of %d bytes, want 4 of %d", c.c.Len(), c.bytes, 4*size)
	}
}

// Many tiny bundles are bounded by their overheads.
func TestPayloadCacheTinyBundles(t *testing.T) {
	c := newPayloadCache(64 << 10)
	for i := range 10000 {
		c.add(fmt.Sprint(i), &tiles.PayloadBundle{First: 1})
	}
	if want := (64 << 10) / payloadCacheBundleOverhead; c.c.Len() != want {
		t.Errorf("cache holds %d empty bundles, want %d", c.c.Len(), want)
	}
}
