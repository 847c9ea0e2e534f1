package sequencer

import (
	"context"
	"testing"
	"time"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// TestPayloadBundlesCompact: the sequencer writes payload bundles of version 2, every
// record's leaf in its compact form, in fewer bytes than version 1 would take, and
// the leaf data they decode to, signed and unsigned events alike, hashes to the
// committed tree.
func TestPayloadBundlesCompact(t *testing.T) {
	e := newTamperEnv(t, "sqlite") // tamperSize customer-signed events
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const unsigned = 50
	for i := range unsigned {
		if _, err := e.st.seq.Submit(ctx, stackLog, tagEntry(nil, 2*uint64(i)+1)); err != nil {
			t.Fatal(err)
		}
	}
	tree, err := e.st.seq.Tree(ctx, stackLog)
	if err != nil || tree.Size != tamperSize+unsigned {
		t.Fatalf("tree %+v, %v", tree, err)
	}
	bs, err := e.st.cat.BatchesCovering(ctx, stackLog, 1, tree.Size)
	if err != nil || len(bs) == 0 {
		t.Fatalf("batches: %v, %v", bs, err)
	}
	rf := compact.RangeFactory{Hash: rfc6962.DefaultHasher.HashChildren}
	rng := rf.NewEmptyRange(0)
	signed := 0
	for _, b := range bs {
		ref, err := batchRef(stackLog, b)
		if err != nil {
			t.Fatal(err)
		}
		seg := e.read(ref.Key)
		if ref.Len > 0 {
			seg = seg[ref.Off : ref.Off+ref.Len]
		}
		if seg[7] != 2 {
			t.Fatalf("batch %d-%s: payload bundle of version %d", b.First, b.BatchID, seg[7])
		}
		var pb tiles.PayloadBundle
		if err := pb.UnmarshalBinary(seg); err != nil {
			t.Fatal(err)
		}
		old, err := pb.MarshalBinary() // version 1 of the same records
		if err != nil {
			t.Fatal(err)
		}
		if saved := len(old) - len(seg); saved < 100*len(pb.Records) {
			t.Errorf("batch %d-%s: %d bytes, %d in version 1", b.First, b.BatchID, len(seg), len(old))
		}
		for _, r := range pb.Records {
			leaf, err := tlog.DecodeLeaf(r.LeafData)
			if err != nil {
				t.Fatal(err)
			}
			if leaf.Signature != "" {
				signed++
			}
			h := tlog.LeafHash(r.LeafData)
			if err := rng.Append(h[:], nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	root, err := rng.GetRootHash(nil)
	if err != nil || rng.End() != tree.Size || tlog.Hash(root) != tree.Root {
		t.Fatalf("payload bundles' leaves: %d, root %x (%v); tree %d, %s", rng.End(), root, err, tree.Size, tlog.Hex(tree.Root))
	}
	if signed != tamperSize {
		t.Fatalf("%d signed leaves, want %d", signed, tamperSize)
	}
}
