package sequencer

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/tlog"
)

// BenchmarkSubmitMany measures what POST /log/batch costs below HTTP: one op is one
// batch of 1,000 unsigned 1 KB events submitted with SubmitMany and acknowledged, on
// the embedded default (SQLite catalog, filesystem store with fsync, real keyring),
// one batch at a time. cpu-µs/event is the process's CPU per event, which does not
// grow when other processes share the cores as ns/op does; disk-B/event what the
// process caused to be written (/proc/self/io), before the WAL checkpoints and the
// publication catch up.
func BenchmarkSubmitMany(b *testing.B) {
	ctx := context.Background()
	dir := benchDir(b)
	st, err := openStack(ctx, newStackConfig(b, "sqlite", filepath.Join(dir, "catalog.db"), dir), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.close()
	const n = 1000
	entries := make([]Entry, n)
	for i := range entries {
		p, err := tlog.Canonicalize(fmt.Appendf(nil, `{"action":"load.event","actor":{"type":"user","id":"u%d"},`+
			`"metadata":{"pad":%q},"status":"success"}`, i, strings.Repeat("x", 940)))
		if err != nil {
			b.Fatal(err)
		}
		entries[i] = Entry{Payload: p, Index: Index{Action: "load.event", Status: "success", ActorType: "user",
			ActorID: fmt.Sprintf("u%d", i)}}
	}
	// Warm up: the checkpoint row and this epoch's data key exist before timing.
	if _, err := st.seq.Submit(ctx, stackLog, entries[0]); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, disk0 := cpuTime(b), diskWriteBytes(b)
	for b.Loop() {
		_, errs := st.seq.SubmitMany(ctx, stackLog, entries)
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N)/n/1e3, "cpu-µs/event")
	b.ReportMetric(float64(diskWriteBytes(b)-disk0)/float64(b.N)/n, "disk-B/event")
}
