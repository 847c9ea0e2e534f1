package mem_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tiles/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) tiles.Store { return mem.New() }, storetest.Options{})
}

func TestFaults(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	s := mem.New()

	remove := s.Inject(mem.Fault{Op: mem.OpCreate, Key: "a/", Err: boom, Times: 1})
	if err := s.Create(ctx, "a/x", []byte("1"), tiles.Attrs{}); !errors.Is(err, boom) {
		t.Fatalf("faulted Create = %v", err)
	}
	if _, err := s.Get(ctx, "a/x"); !errors.Is(err, tiles.ErrNotFound) {
		t.Fatalf("a failed-before Create stored the object: %v", err)
	}
	if err := s.Create(ctx, "a/x", []byte("1"), tiles.Attrs{}); err != nil {
		t.Fatalf("Create after the fault's last firing: %v", err)
	}
	remove()

	remove = s.Inject(mem.Fault{Op: mem.OpCreate, Key: "s/", Err: boom, Times: 1, Skip: 1})
	if err := s.Create(ctx, "s/1", []byte("1"), tiles.Attrs{}); err != nil {
		t.Fatalf("Create skipped by the fault: %v", err)
	}
	if err := s.Create(ctx, "s/2", []byte("2"), tiles.Attrs{}); !errors.Is(err, boom) {
		t.Fatalf("Create after the skipped one = %v", err)
	}
	if err := s.Create(ctx, "s/2", []byte("2"), tiles.Attrs{}); err != nil {
		t.Fatalf("Create after the fault's last firing: %v", err)
	}
	remove()

	s.Inject(mem.Fault{Op: mem.OpPut, Err: boom, After: true})
	if err := s.Put(ctx, "b/y", []byte("2"), tiles.Attrs{}); !errors.Is(err, boom) {
		t.Fatalf("faulted Put = %v", err)
	}
	if got, err := s.Get(ctx, "b/y"); err != nil || string(got) != "2" {
		t.Fatalf("a failed-after Put did not store the object: %q, %v", got, err)
	}

	s.Inject(mem.Fault{Op: mem.OpCreate, Key: "c/z", Conflict: []byte("other")})
	if err := s.Create(ctx, "c/z", []byte("mine"), tiles.Attrs{}); !errors.Is(err, tiles.ErrConflict) {
		t.Fatalf("Create under a conflict fault = %v", err)
	}

	s.Inject(mem.Fault{Op: mem.OpGet, Key: "d/", Delay: time.Hour})
	c, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := s.Get(c, "d/w"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("slow Get under a deadline = %v", err)
	}
	if n := s.Calls(mem.OpGet); n != 3 {
		t.Fatalf("Calls(get) = %d, want 3", n)
	}
}
