package httpapi

import (
	"testing"
	"time"
)

// TestBuckets checks the token buckets on a fake clock: a burst of limit, then limit
// per window, the wait for the next token, n tokens at once, a changed limit, and idle
// buckets dropped.
func TestBuckets(t *testing.T) {
	now := time.Date(2026, 11, 24, 9, 59, 59, 900e6, time.UTC) // just before a 10 s boundary
	b := newBuckets()
	b.now = func() time.Time { return now }
	take := func(n int) (bool, time.Duration) { return b.take("k", 5, 10*time.Second, n) }

	for i := range 5 {
		if ok, _ := take(1); !ok {
			t.Fatalf("request %d of a burst of 5 refused", i+1)
		}
	}
	ok, wait := take(1)
	if ok || wait != 2*time.Second {
		t.Fatalf("sixth request: %v, wait %s; want refused, 2s", ok, wait)
	}
	now = now.Add(200 * time.Millisecond) // across the clock's 10 s boundary: nothing resets
	if ok, wait := take(1); ok || wait != 1800*time.Millisecond {
		t.Fatalf("after the boundary: %v, wait %s; want refused, 1.8s", ok, wait)
	}
	if blocked, wait := b.empty("k", 5, 10*time.Second); !blocked || wait != 1800*time.Millisecond {
		t.Fatalf("empty = %v, %s", blocked, wait)
	}
	now = now.Add(1800 * time.Millisecond)
	if ok, _ := take(1); !ok {
		t.Fatal("a token that came back is refused")
	}
	if ok, _ := take(1); ok {
		t.Fatal("a second token passed after one refill")
	}

	// n at once: all or nothing.
	now = now.Add(6 * time.Second) // 3 tokens
	if ok, wait := take(4); ok || wait != 2*time.Second {
		t.Fatalf("4 of 3 tokens: %v, wait %s", ok, wait)
	}
	if ok, _ := take(3); !ok {
		t.Fatal("3 of 3 tokens refused")
	}
	if ok, wait := take(6); ok || wait != 10*time.Second {
		t.Fatalf("more than the bucket holds: %v, wait %s; want refused, a window", ok, wait)
	}

	// A raised limit (the project's override) applies to the existing bucket.
	now = now.Add(time.Minute)
	for i := range 50 {
		if ok, _ := b.take("k", 50, 10*time.Second, 1); !ok {
			t.Fatalf("request %d under a raised limit of 50 refused", i+1)
		}
	}

	// Full buckets are dropped once a minute; the used one stays until it refills.
	b.take("idle", 5, 10*time.Second, 1)
	now = now.Add(2 * time.Minute)
	b.take("new", 5, 10*time.Second, 1)
	b.mu.Lock()
	_, idle := b.m["idle"]
	n := len(b.m)
	b.mu.Unlock()
	if idle || n != 1 {
		t.Fatalf("after the sweep: %d buckets, idle kept %v", n, idle)
	}
}
