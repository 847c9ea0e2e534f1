package retention_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/retention"
)

// TestHoldDuringShred creates a legal hold between each two steps of a shredding (the
// job's AfterStep hook) on each catalog: whatever the step, the held event's payload
// survives the destroyed key, the rest of the epoch is shredded in the same pass, and
// the record is written once. Issue 16: a hold created after step 3 used to lose its
// events.
func TestHoldDuringShred(t *testing.T) {
	for name, open := range catalogs {
		for step := 1; step <= 4; step++ {
			t.Run(fmt.Sprintf("%s/after-step-%d", name, step), func(t *testing.T) {
				t.Parallel()
				testHoldDuringShred(t, open(t), step)
			})
		}
	}
}

func testHoldDuringShred(t *testing.T, cat catalog.RetentionCatalog, holdAfter int) {
	ctx := context.Background()
	jan := time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)
	st := newStack(t, cat, jan)
	p, err := st.ctl.CreateProject(ctx, operator, "holdgap")
	if err != nil {
		t.Fatal(err)
	}
	log := catalog.LogID{ProjectID: p.ID, Stream: catalog.StreamEvents}
	const n = 4
	for i := 1; i <= n; i++ {
		st.clock.Set(jan.Add(time.Duration(i) * time.Hour))
		st.submit(t, p.ID, i, nil, "")
	}
	if _, err := st.ctl.SetRetention(ctx, operator, p.ID, catalog.StreamEvents, 30); err != nil {
		t.Fatal(err)
	}
	if _, err := st.seq.Materialize(ctx, log); err != nil {
		t.Fatal(err)
	}
	before, err := st.seq.Events(ctx, log, []uint64{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range before {
		if e.Nonce == nil {
			t.Fatalf("event #%d unreadable before shredding", e.Leaf.Sequence)
		}
	}
	const heldSeq = 3
	heldID := before[heldSeq-1].Leaf.ID

	var holdErr error
	held := false
	job, err := retention.New(retention.Config{Catalog: cat, Reader: st.seq, Auditor: st.ctl, Keyring: st.kr,
		Store: st.store, Now: st.clock.Now, Holder: "test", AfterStep: func(step int) {
			if step == holdAfter && !held {
				held = true
				_, holdErr = st.ctl.CreateHold(ctx, operator, p.ID, []string{heldID}, "created mid-shred")
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	st.clock.Set(time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC))
	done, err := job.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !held || holdErr != nil {
		t.Fatalf("hold after step %d: created %v, %v", holdAfter, held, holdErr)
	}
	if len(done) != 1 || done[0].Epoch != "2026-01" || done[0].Span != (catalog.Span{First: 1, Last: n, Count: n}) || done[0].Held != 1 {
		t.Errorf("RunOnce = %+v", done)
	}
	if k, err := cat.DataKey(ctx, log, "2026-01"); err != nil || !k.Destroyed() {
		t.Errorf("January's data key after the pass: %+v, %v", k, err)
	}
	after, err := st.seq.Events(ctx, log, []uint64{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range after {
		seq := uint64(i) + 1
		switch {
		case seq == heldSeq && (e.Nonce == nil || *e.Nonce != *before[i].Nonce || !bytes.Equal(e.Payload, before[i].Payload)):
			t.Errorf("held event #%d lost its payload (hold created after step %d): nonce %v, payload %q", seq, holdAfter, e.Nonce, e.Payload)
		case seq != heldSeq && (e.Nonce != nil || len(e.Payload) != 0):
			t.Errorf("event #%d not shredded: payload %q", seq, e.Payload)
		}
	}
	if got, err := cat.HeldPayloads(ctx, log, 1, n); err != nil || len(got) != 1 || got[0] != heldSeq {
		t.Fatalf("held payloads = %v, %v", got, err)
	}
	if recs := st.auditRecords(t, p.ID, retention.ActionShredded); len(recs) != 1 {
		t.Fatalf("%d retention.shredded records", len(recs))
	}
}
