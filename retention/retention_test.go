package retention_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/retention"
	"github.com/sealtrail/sealtrail/tlog"
)

func TestEpochBounds(t *testing.T) {
	for _, tc := range []struct {
		epoch      string
		start, end string
		ok         bool
	}{
		{"2026-01", "2026-01-01", "2026-02-01", true},
		{"2026-12", "2026-12-01", "2027-01-01", true},
		{"2026-02-28", "2026-02-28", "2026-03-01", true},
		{"held", "", "", false},
		{"2026-13", "", "", false},
	} {
		s, e, ok := retention.EpochBounds(tc.epoch)
		if ok != tc.ok || (ok && (s.Format(time.DateOnly) != tc.start || e.Format(time.DateOnly) != tc.end)) {
			t.Errorf("EpochBounds(%q) = %s, %s, %v", tc.epoch, s, e, ok)
		}
	}
}

// TestShred shreds an epoch with a fake clock on each catalog: held and released,
// signed and unsigned events; then checks what item 2 of issue 16 promises.
func TestShred(t *testing.T) {
	for name, open := range catalogs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testShred(t, open(t))
		})
	}
}

func testShred(t *testing.T, cat catalog.RetentionCatalog) {
	ctx := context.Background()
	jan := time.Date(2026, 1, 10, 9, 0, 0, 0, time.UTC)
	st := newStack(t, cat, jan)
	p, err := st.ctl.CreateProject(ctx, operator, "retention")
	if err != nil {
		t.Fatal(err)
	}
	log := catalog.LogID{ProjectID: p.ID, Stream: catalog.StreamEvents}
	pub, priv, _ := ed25519.GenerateKey(nil)
	// January: 10 events, even ones signed. February: 3 more.
	var ids []string
	for i := 1; i <= 10; i++ {
		st.clock.Set(jan.Add(time.Duration(i) * time.Hour))
		var res = st.submit(t, p.ID, i, nil, "")
		if i%2 == 0 {
			res = st.submit(t, p.ID, 100+i, priv, "sk_test")
		}
		ids = append(ids, res.ID)
	}
	// sequences: odd i unsigned at 1,2(unsigned i=2),3(signed)... collect by id instead.
	feb := time.Date(2026, 2, 3, 9, 0, 0, 0, time.UTC)
	for i := 1; i <= 3; i++ {
		st.clock.Set(feb.Add(time.Duration(i) * time.Minute))
		st.submit(t, p.ID, 200+i, nil, "")
	}
	janCount := uint64(15) // 10 unsigned + 5 signed
	evByID, err := cat.EventsByID(ctx, log, ids)
	if err != nil {
		t.Fatal(err)
	}
	signedHeld, unsignedHeld, released := evByID[ids[1]], evByID[ids[2]], evByID[ids[3]]
	// Hold a signed and an unsigned event; a second hold, released before the run,
	// names a third.
	st.clock.Set(feb.Add(time.Hour))
	if _, err := st.ctl.CreateHold(ctx, operator, p.ID, []string{signedHeld.ID, unsignedHeld.ID}, "case 1"); err != nil {
		t.Fatal(err)
	}
	h2, err := st.ctl.CreateHold(ctx, operator, p.ID, []string{released.ID}, "case 2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ctl.SetRetention(ctx, operator, p.ID, catalog.StreamEvents, 30); err != nil {
		t.Fatal(err)
	}
	before := st.export(t, log)

	// Not yet past retention: January ends Feb 1, plus 30 days is Mar 3.
	st.clock.Set(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
	if done, err := st.job.RunOnce(ctx); err != nil || len(done) != 0 {
		t.Fatalf("RunOnce before expiry = %+v, %v", done, err)
	}
	// The operator's minimum holds it longer: 40 days, until Mar 13.
	if err := st.ctl.SetMinRetention(ctx, operator, p.ID, 40); err != nil {
		t.Fatal(err)
	}
	st.clock.Set(time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC))
	if done, err := st.job.RunOnce(ctx); err != nil || len(done) != 0 {
		t.Fatalf("RunOnce under the minimum = %+v, %v", done, err)
	}
	if _, err := st.ctl.ReleaseHold(ctx, operator, p.ID, h2.ID); err != nil {
		t.Fatal(err)
	}
	st.clock.Set(time.Date(2026, 3, 20, 0, 0, 0, 0, time.UTC))
	done, err := st.job.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 1 || done[0].Epoch != "2026-01" || done[0].Span != (catalog.Span{First: 1, Last: janCount, Count: janCount}) || done[0].Held != 2 {
		t.Fatalf("RunOnce = %+v", done)
	}
	held := []uint64{signedHeld.Sequence, unsignedHeld.Sequence}
	slices.Sort(held)
	checkShredded(t, st, log, before, janCount, held)

	// The record names stream, epoch, range and count; a second pass writes no other.
	if done, err := st.job.RunOnce(ctx); err != nil || len(done) != 0 {
		t.Fatalf("second RunOnce = %+v, %v", done, err)
	}
	recs := st.auditRecords(t, p.ID, retention.ActionShredded)
	if len(recs) != 1 {
		t.Fatalf("%d retention.shredded records", len(recs))
	}
	meta, _ := recs[0]["metadata"].(map[string]any)
	if meta["stream"] != "events" || meta["epoch"] != "2026-01" || meta["firstSequence"] != float64(1) ||
		meta["lastSequence"] != float64(janCount) || meta["count"] != float64(janCount) || meta["held"] != float64(2) {
		t.Fatalf("retention.shredded metadata = %v", meta)
	}

	// Verify: the rebuild of the stream is valid, signatures checked, shredded counted.
	keys := func(id string) []ed25519.PublicKey {
		if id == "sk_test" {
			return []ed25519.PublicKey{pub}
		}
		return nil
	}
	res, err := st.seq.Rebuild(ctx, log, keys)
	if err != nil || res.Break != nil || res.Size != janCount+3 {
		t.Fatalf("Rebuild = %+v, %v", res, err)
	}
	if res.Shredded != janCount-2 {
		t.Fatalf("Rebuild counted %d shredded, want %d", res.Shredded, janCount-2)
	}

	// Releasing the last hold lets its events expire at the next pass.
	holds, err := st.ctl.ListHolds(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range holds {
		if h.State() == catalog.HoldActive {
			if _, err := st.ctl.ReleaseHold(ctx, operator, p.ID, h.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := st.job.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	checkShredded(t, st, log, before, janCount, nil)
	if got, err := cat.HeldPayloads(ctx, log, 1, 1<<40); err != nil || len(got) != 0 {
		t.Fatalf("held payloads after release = %v, %v", got, err)
	}

	// The project_audit stream's retention shreds its old records, except the
	// retention.shredded records (the evidence verify --audit checks against), even
	// when their own epoch expires.
	if _, err := st.ctl.SetRetention(ctx, operator, p.ID, catalog.StreamProjectAudit, 30); err != nil {
		t.Fatal(err)
	}
	st.clock.Set(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	done, err = st.job.RunOnce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	audit := catalog.LogID{ProjectID: p.ID, Stream: catalog.StreamProjectAudit}
	var auditShreds int
	for _, d := range done {
		if d.Log == audit {
			auditShreds++
		}
	}
	if auditShreds == 0 {
		t.Fatalf("no project_audit epoch shredded: %+v", done)
	}
	recs = st.auditRecords(t, p.ID, retention.ActionShredded)
	epochs := map[string]bool{}
	for _, r := range recs {
		meta, _ := r["metadata"].(map[string]any)
		epochs[fmt.Sprint(meta["stream"], "/", meta["epoch"])] = true
	}
	if !epochs["events/2026-01"] || !epochs["events/2026-02"] || !epochs["project_audit/2026-03"] {
		t.Fatalf("retention.shredded records readable after project_audit retention: %v", epochs)
	}
	var shreddedAudit int
	for _, line := range st.export(t, audit) {
		if bytes.Contains(line, []byte(`"payloadNonce":null`)) {
			shreddedAudit++
		}
	}
	if shreddedAudit == 0 {
		t.Fatal("no project_audit record was shredded")
	}
}

// checkShredded checks log after sequences 1..shredThrough were shredded except held:
// export lines, index rows, leaves and signatures.
func checkShredded(t *testing.T, st *stack, log catalog.LogID, before [][]byte, shredThrough uint64, held []uint64) {
	t.Helper()
	ctx := context.Background()
	after := st.export(t, log)
	if len(after) != len(before) {
		t.Fatalf("export has %d lines, had %d", len(after), len(before))
	}
	rb := tlog.NewRebuilder(tlog.RebuildOptions{})
	for i, line := range after {
		seq := uint64(i) + 1
		shredded := seq <= shredThrough && !slices.Contains(held, seq)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatal(err)
		}
		nonceNull := string(m["payloadNonce"]) == "null"
		_, hasAction := m["action"]
		_, hasActor := m["actor"]
		if shredded != nonceNull || shredded == (hasAction || hasActor) {
			t.Fatalf("line %d (shredded %v): %s", seq, shredded, line)
		}
		if !shredded && !bytes.Equal(line, before[i]) {
			t.Fatalf("line %d changed:\n%s\n%s", seq, before[i], line)
		}
		for _, k := range []string{"leafHash", "payloadHash", "clientSignature", "signingKeyId", "id", "timestamp"} {
			if string(m[k]) != string(mustMember(t, before[i], k)) {
				t.Fatalf("line %d: %s changed", seq, k)
			}
		}
		rec, err := tlog.DecodeCanonicalExportLine(line) // the service exports canonical JSON
		if err != nil {
			t.Fatalf("line %d does not decode: %v", seq, err)
		}
		if err := rb.Add(&rec); err != nil {
			t.Fatalf("line %d does not rebuild: %v", seq, err)
		}
	}
	tree, err := st.seq.Tree(ctx, log)
	if err != nil || rb.Root() != tree.Root || rb.Size() != tree.Size {
		t.Fatalf("export rebuilds %d %x, tree %+v, %v", rb.Size(), rb.Root(), tree, err)
	}
	rows, err := st.cat.QueryEvents(ctx, catalog.Query{Log: log, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range rows {
		shredded := e.Sequence <= shredThrough && !slices.Contains(held, e.Sequence)
		blank := e.Action == "" && e.ActorID == "" && e.ActorType == "" && e.TargetID == "" && e.TargetType == ""
		if shredded != blank {
			t.Fatalf("index row %d (shredded %v): %+v", e.Sequence, shredded, e)
		}
	}
	for _, q := range []catalog.Query{{Log: log, ActorID: "user-1"}, {Log: log, TargetID: "doc-3"}, {Log: log, Action: "doc.read"}} {
		q.Limit = 1000
		got, err := st.cat.QueryEvents(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range got {
			if e.Sequence <= shredThrough && !slices.Contains(held, e.Sequence) {
				t.Fatalf("query %+v finds shredded event %d", q, e.Sequence)
			}
		}
	}
}

func mustMember(t *testing.T, line []byte, k string) json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	return m[k]
}
