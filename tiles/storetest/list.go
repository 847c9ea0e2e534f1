package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/sealtrail/sealtrail/tiles"
)

// testList: a store that is a tiles.Lister lists exactly the keys under a prefix,
// not those of a sibling prefix, stops when fn fails, and lists nothing under a prefix
// that holds no object.
func testList(t *testing.T, s tiles.Store, _ Options) {
	l, ok := s.(tiles.Lister)
	if !ok {
		t.Fatalf("%T is not a tiles.Lister", s)
	}
	keys := []string{"p1/events/payload/1-a", "p1/events/payload/9-b", "p1/events/tile/0/000", "p1/events/checkpoint", "p2/events/payload/1-c"}
	for _, k := range keys {
		if err := s.Create(ctx(t), k, []byte(k), tiles.PrivateAttrs); err != nil {
			t.Fatal(err)
		}
	}
	list := func(prefix string) []string {
		var got []string
		if err := l.List(ctx(t), prefix, func(k string) error { got = append(got, k); return nil }); err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		slices.Sort(got)
		return got
	}
	if got := list("p1/events/payload/"); !slices.Equal(got, []string{"p1/events/payload/1-a", "p1/events/payload/9-b"}) {
		t.Fatalf("List(p1/events/payload/) = %v", got)
	}
	if got := list("p1/"); len(got) != 4 {
		t.Fatalf("List(p1/) = %v, want 4 keys", got)
	}
	if got := list("p3/events/payload/"); len(got) != 0 {
		t.Fatalf("List of an empty prefix = %v", got)
	}
	stop := errors.New("stop")
	n := 0
	err := l.List(ctx(t), "p1/", func(string) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("List with a failing fn: err %v after %d calls", err, n)
	}
}
