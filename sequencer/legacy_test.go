package sequencer

import (
	"context"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
)

// perBatchCatalog makes every batch look as before group payload objects: it commits
// batch rows without a segment and, once the tick's group object is durable, copies
// each batch's segment to the batch's own object <prefix>/payload/<first>-<batchId>
// and deletes the group object.
type perBatchCatalog struct {
	Catalog
	store tiles.Store
}

func (c *perBatchCatalog) SealGroup(ctx context.Context, logs []catalog.LogID, fn catalog.SealGroupFunc) ([]catalog.Sealed, error) {
	return c.Catalog.SealGroup(ctx, logs, func(ctx context.Context, cps []catalog.Checkpoint) ([]*catalog.SealBatch, func() error, error) {
		batches, durable, err := fn(ctx, cps)
		if err != nil || durable == nil {
			return batches, durable, err
		}
		type seg struct {
			key, group string
			off, n     uint64
		}
		var segs []seg
		for i, b := range batches {
			if b == nil {
				continue
			}
			p := prefixOf(cps[i].Log)
			path, err := tiles.PayloadPath(cps[i].Size+1, b.BatchID)
			if err != nil {
				return nil, nil, err
			}
			segs = append(segs, seg{key: p.Key(path), off: b.Offset, n: b.Length, group: b.Object})
			b.Object, b.Offset, b.Length = "", 0, 0
		}
		return batches, func() error {
			if err := durable(); err != nil {
				return err
			}
			for _, s := range segs {
				data, err := c.store.GetRange(ctx, s.group, int64(s.off), int64(s.n))
				if err != nil {
					return err
				}
				if err := c.store.Create(ctx, s.key, data, tiles.PrivateAttrs); err != nil {
					return err
				}
			}
			return c.store.Delete(ctx, segs[0].group)
		}, nil
	})
}

// TestPerBatchPayloadsStillRead: batch rows written before group payload objects
// (no segment; the batch's own object) still read everywhere: proofs, publication,
// event reads and the rebuild behind export and /verify, also in a fresh process
// (no cache); and rows of both forms in one stream read together.
func TestPerBatchPayloadsStillRead(t *testing.T) {
	logs := []catalog.LogID{{ProjectID: "prj_old1", Stream: catalog.StreamEvents}, {ProjectID: "prj_old2", Stream: catalog.StreamEvents}}
	var old *perBatchCatalog
	h := newHarness(t, func(c *Config) {
		old = &perBatchCatalog{Catalog: c.Catalog, store: c.Store}
		c.Catalog = old
	})
	res := map[catalog.LogID][]Result{}
	for _, log := range logs {
		res[log] = h.submitN(log, 5)
	}
	ctx := context.Background()
	for _, log := range logs {
		bs, err := h.db.BatchesCovering(ctx, log, 1, 5)
		if err != nil || len(bs) == 0 || bs[0].Object != "" {
			t.Fatalf("batches of %s: %+v, %v", log, bs, err)
		}
		h.checkLog(log, res[log])
	}
	var groups int
	if err := h.store.List(ctx, tiles.GroupPayloadPrefix, func(string) error { groups++; return nil }); err != nil || groups != 0 {
		t.Fatalf("%d group objects left, %v", groups, err)
	}

	// A fresh sequencer on the same storage (nothing cached) writes group objects
	// after the per-batch ones and reads both.
	if err := h.seq.Close(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := h.seq.cfg
	cfg.Catalog = h.cat
	seq, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.seq = seq
	for _, log := range logs {
		res[log] = append(res[log], h.submitN(log, 3)...)
		bs, err := h.db.BatchesCovering(ctx, log, 1, 8)
		if err != nil || bs[len(bs)-1].Object == "" || bs[0].Object != "" {
			t.Fatalf("batches of %s: %+v, %v", log, bs, err)
		}
		h.checkLog(log, res[log])
		seqs := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
		evs, err := h.seq.Events(ctx, log, seqs)
		if err != nil || len(evs) != len(seqs) {
			t.Fatalf("events of %s: %d, %v", log, len(evs), err)
		}
		for i, e := range evs {
			if e.Leaf.Sequence != seqs[i] || e.Payload == nil || e.Leaf.ProjectID != log.ProjectID {
				t.Fatalf("event %d of %s: %+v", seqs[i], log, e.Leaf)
			}
		}
	}
}
