package tiles_test

import (
	"context"
	"crypto/ed25519"
	"fmt"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

// Example shows the calls a sequencer and a proof endpoint make: materialize each
// committed batch, publish the checkpoint, and serve proofs against the catalog's
// trusted tree.
func Example() {
	ctx := context.Background()
	store := mem.New() // storeurl.Open(ctx, "file:///var/lib/sealtrail/objects") in cmd
	prefix, err := tiles.StreamPrefix("proj1", tlog.StreamEvents)
	if err != nil {
		panic(err)
	}
	_, priv, _ := ed25519.GenerateKey(nil)
	origin := tlog.CheckpointOrigin("audit.example.com", "proj1", tlog.StreamEvents)

	// The sequencer keeps one Writer and the compact range per project-stream.
	w := tiles.NewWriter(store, prefix, nil)
	rb := tlog.NewRootBuilder()
	size := uint64(0)
	for batch := range 3 {
		var leaves [][]byte
		for i := range 100 {
			leaves = append(leaves, fmt.Appendf(nil, `{"v":1,"batch":%d,"i":%d}`, batch, i))
		}
		for _, l := range leaves {
			rb.Append(tlog.LeafHash(l))
		}
		root := rb.Root()
		// ... payload bundle written, batch committed in SQL with (size, root) ...
		if err := w.Materialize(ctx, size, leaves, root); err != nil {
			panic(err) // retry; stop on ErrConflict or ErrMismatch
		}
		size += uint64(len(leaves))
		note, err := tlog.SignCheckpoint(priv, origin, size, root)
		if err != nil {
			panic(err)
		}
		if err := tiles.PublishCheckpoint(ctx, store, prefix, note); err != nil {
			panic(err)
		}
	}

	// A proof endpoint trusts the catalog's checkpoint row.
	trusted := tiles.Tree{Size: size, Root: rb.Root()}
	r := tiles.NewReader(store, prefix, trusted, nil)
	p, err := r.InclusionProof(ctx, 150, 250)
	if err != nil {
		panic(err)
	}
	old, _ := r.TreeHash(ctx, 250)
	leaf, _ := r.LeafHash(ctx, 150)
	fmt.Println(len(p), tlog.VerifyInclusion(leaf, 150, 250, p, old) == nil)
	c, _ := r.ConsistencyProof(ctx, 250, size)
	fmt.Println(len(c), tlog.VerifyConsistency(250, size, old, trusted.Root, c) == nil)
	// Output:
	// 8 true
	// 9 true
}
