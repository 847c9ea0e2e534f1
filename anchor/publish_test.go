package anchor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/mem"
	"github.com/sealtrail/sealtrail/tlog"
)

var errDuplicate = errors.New("entry already in the log")

// onceLog is a Publisher that counts its calls and attests the time at when set;
// with once, like Rekor, it logs each checkpoint once and refuses the same checkpoint
// again (a 409 without a proof).
type onceLog struct {
	typ   string
	once  bool
	at    time.Time
	seen  map[string]bool
	calls int
}

func (o *onceLog) Type() string { return o.typ }
func (o *onceLog) Publish(_ context.Context, cp []byte) (string, json.RawMessage, time.Time, error) {
	o.calls++
	if o.once && o.seen[string(cp)] {
		return "", nil, time.Time{}, errDuplicate
	}
	o.seen[string(cp)] = true
	return fmt.Sprintf("%s/%d", o.typ, len(o.seen)), json.RawMessage(`{"n":` + fmt.Sprint(len(o.seen)) + `}`), o.at, nil
}

// TestAttest: anchoredAt is the RFC 3161 time when a TSA attests one, even when a
// witness attests an earlier time; a run that published but failed to record the
// anchors keeps the first answers for the same checkpoint instead of publishing it
// again (which a Rekor log refuses), and asks again only the publisher that failed.
func TestAttest(t *testing.T) {
	eachCatalog(t, func(t *testing.T, db catalog.Catalog) {
		ctx := context.Background()
		key := testKey(t)
		store := mem.New()
		tsaTime := time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC)
		wit := &onceLog{typ: "witness", at: tsaTime.Add(-time.Minute), seen: map[string]bool{}}
		rk := &onceLog{typ: "rekor", once: true, seen: map[string]bool{}}
		ts := &onceLog{typ: TypeRFC3161, at: tsaTime, seen: map[string]bool{}}
		fc := &faultyCatalog{Catalog: db, method: "anchors"}
		j, err := New(Config{Catalog: fc, Store: store, Origin: testOrigin, Key: key, Holder: "h", Publishers: []Publisher{wit, rk, ts}})
		if err != nil {
			t.Fatal(err)
		}
		logs := logsN(2)
		grow(t, db, 2, logs...)
		if _, err := j.RunOnce(ctx); !errors.Is(err, errInjected) {
			t.Fatalf("run = %v, want the injected fault", err)
		}
		rep, err := j.RunOnce(ctx)
		if err != nil || rep.Anchored != 2 {
			t.Fatalf("run after the failed record: %+v, %v", rep, err)
		}
		if wit.calls != 1 || rk.calls != 1 || ts.calls != 1 {
			t.Fatalf("publications: witness %d, rekor %d, tsa %d; want one each", wit.calls, rk.calls, ts.calls)
		}
		for _, l := range logs {
			hs, err := db.ListTreeHeads(ctx, l, 10)
			if err != nil || len(hs) != 1 {
				t.Fatalf("%s: %d heads, %v", l, len(hs), err)
			}
			h := hs[0]
			p := proofOf(t, h)
			if !h.Anchor.AnchoredAt.Equal(tsaTime) || h.Anchor.Type != "witness" || len(p.External) != 3 ||
				p.External[1].AnchorRef != "rekor/1" || p.External[2].AnchoredAt != tlog.FormatTime(tsaTime) {
				t.Fatalf("%s: anchor %+v, proof %+v", l, h.Anchor, p.External)
			}
		}

		// A restarted job (or another replica) has no memory of the first answers but
		// finds them kept in the object store: nothing is published again, and Rekor's
		// proof, which it would not give twice, is in the anchors.
		grow(t, db, 1, logs[0])
		fc = &faultyCatalog{Catalog: db, method: "anchors"}
		j, _ = New(Config{Catalog: fc, Store: store, Origin: testOrigin, Key: key, Holder: "h", Publishers: []Publisher{wit, rk, ts}})
		if _, err := j.RunOnce(ctx); !errors.Is(err, errInjected) {
			t.Fatalf("run = %v, want the injected fault", err)
		}
		j, _ = New(Config{Catalog: db, Store: store, Origin: testOrigin, Key: key, Holder: "h", Publishers: []Publisher{wit, rk, ts}})
		if rep, err := j.RunOnce(ctx); err != nil || rep.Anchored != 1 {
			t.Fatalf("run after a restart: %+v, %v", rep, err)
		}
		if wit.calls != 2 || rk.calls != 2 || ts.calls != 2 {
			t.Fatalf("publications after the restart: witness %d, rekor %d, tsa %d; want two each", wit.calls, rk.calls, ts.calls)
		}
		hs, _ := db.ListTreeHeads(ctx, logs[0], 10)
		if h := hs[0]; !h.Anchor.AnchoredAt.Equal(tsaTime) {
			t.Fatalf("anchoredAt after a restart: %v", h.Anchor.AnchoredAt)
		}
		if p := proofOf(t, hs[0]); len(p.External) != 3 || p.External[1].AnchorType != "rekor" || p.External[1].AnchorRef != "rekor/2" ||
			p.External[2].AnchoredAt != tlog.FormatTime(tsaTime) {
			t.Fatalf("anchor after a restart: %+v", p.External)
		}

		// An answer kept in the store is used only for its own checkpoint and
		// publisher; an unreadable one fails that publisher, not the others.
		grow(t, db, 1, logs[0])
		fc = &faultyCatalog{Catalog: db, method: "anchors"}
		j, _ = New(Config{Catalog: fc, Store: store, Origin: testOrigin, Key: key, Holder: "h", Publishers: []Publisher{wit, rk, ts}})
		if _, err := j.RunOnce(ctx); !errors.Is(err, errInjected) {
			t.Fatalf("run = %v, want the injected fault", err)
		}
		st, err := db.TreeHeadsLog(ctx)
		if err != nil {
			t.Fatal(err)
		}
		note, err := j.checkpoint(st)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Get(ctx, keptKey(note, 1, "rekor")); err != nil {
			t.Fatalf("rekor's answer was not kept: %v", err)
		}
		if err := store.Put(ctx, keptKey(note, 1, "rekor"), []byte(`{"anchorRef":""}`), tiles.Attrs{}); err != nil {
			t.Fatal(err)
		}
		j, _ = New(Config{Catalog: db, Store: store, Origin: testOrigin, Key: key, Holder: "h", Publishers: []Publisher{wit, rk, ts}})
		if rep, err := j.RunOnce(ctx); err != nil || rep.Anchored != 1 {
			t.Fatalf("run with a damaged kept answer: %+v, %v", rep, err)
		}
		hs, _ = db.ListTreeHeads(ctx, logs[0], 10)
		if p := proofOf(t, hs[0]); len(p.External) != 2 || p.External[0].AnchorType != "witness" || p.External[1].AnchorType != TypeRFC3161 {
			t.Fatalf("anchor with a damaged kept answer: %+v", p.External)
		}
		if wit.calls != 3 || rk.calls != 3 || ts.calls != 3 {
			t.Fatalf("publications with kept answers: witness %d, rekor %d, tsa %d; want three each", wit.calls, rk.calls, ts.calls)
		}

		// Without a TSA, anchoredAt is the earliest time attested.
		grow(t, db, 1, logs[1])
		j, _ = New(Config{Catalog: db, Store: store, Origin: testOrigin, Key: key, Holder: "h", Publishers: []Publisher{rk, wit}})
		if rep, err := j.RunOnce(ctx); err != nil || rep.Anchored != 1 {
			t.Fatalf("run without a TSA: %+v, %v", rep, err)
		}
		hs, _ = db.ListTreeHeads(ctx, logs[1], 10)
		if !hs[0].Anchor.AnchoredAt.Equal(wit.at) || hs[0].Anchor.Type != "rekor" {
			t.Fatalf("anchor without a TSA: %+v", hs[0].Anchor)
		}
	})
}
