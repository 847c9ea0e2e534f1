package sequencer

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
)

func memoBundle(first uint64, n int) *tiles.PayloadBundle {
	b := &tiles.PayloadBundle{First: first}
	for i := range n {
		b.Records = append(b.Records, tiles.PayloadRecord{LeafData: []byte(fmt.Sprintf("leaf %d", first+uint64(i))), Ciphertext: []byte("c")})
	}
	return b
}

func wantLeaves(t *testing.T, m *leafMemo, log catalog.LogID, from, to uint64, ok bool) {
	t.Helper()
	got, found := m.get(log, from, to)
	if found != ok {
		t.Fatalf("get(%d, %d): found %v, want %v", from, to, found, ok)
	}
	if !ok {
		return
	}
	if len(got) != int(to-from+1) {
		t.Fatalf("get(%d, %d): %d leaves", from, to, len(got))
	}
	for i, d := range got {
		if want := fmt.Sprintf("leaf %d", from+uint64(i)); !bytes.Equal(d, []byte(want)) {
			t.Fatalf("get(%d, %d)[%d] = %q, want %q", from, to, i, d, want)
		}
	}
}

func TestLeafMemo(t *testing.T) {
	m := newLeafMemo()
	a := catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}
	b := catalog.LogID{ProjectID: "prj_b", Stream: catalog.StreamEvents}
	m.add(a, memoBundle(1, 3))
	m.add(a, memoBundle(4, 2))
	m.add(b, memoBundle(7, 1)) // b's first batches came from elsewhere
	wantLeaves(t, m, a, 1, 5, true)
	wantLeaves(t, m, a, 2, 4, true)
	wantLeaves(t, m, a, 1, 6, false) // not committed here
	wantLeaves(t, m, b, 7, 7, true)
	wantLeaves(t, m, b, 6, 7, false)
	// Published up to 3: only 4 and 5 are left.
	m.trim(a, 3)
	wantLeaves(t, m, a, 3, 4, false)
	wantLeaves(t, m, a, 4, 5, true)
	// A gap (another replica committed 6-9) starts the run over.
	m.add(a, memoBundle(10, 1))
	wantLeaves(t, m, a, 4, 5, false)
	wantLeaves(t, m, a, 10, 10, true)
	m.trim(a, 10)
	m.trim(b, 7)
	if len(m.runs) != 0 || m.bytes != 0 {
		t.Fatalf("after publishing everything: %d runs, %d bytes", len(m.runs), m.bytes)
	}
}

func TestLeafMemoBound(t *testing.T) {
	m := newLeafMemo()
	a := catalog.LogID{ProjectID: "prj_a", Stream: catalog.StreamEvents}
	big := &tiles.PayloadBundle{First: 1, Records: []tiles.PayloadRecord{{LeafData: make([]byte, leafMemoBytes-10)}}}
	m.add(a, big)
	m.add(a, memoBundle(2, 3)) // over the budget: the run is dropped, not left with a gap
	if _, ok := m.get(a, 1, 1); ok {
		t.Fatal("a run past the budget kept its leaves")
	}
	if m.bytes != 0 || len(m.runs) != 0 {
		t.Fatalf("%d bytes in %d runs after dropping", m.bytes, len(m.runs))
	}
	m.add(a, memoBundle(5, 2))
	wantLeaves(t, m, a, 5, 6, true)
}
