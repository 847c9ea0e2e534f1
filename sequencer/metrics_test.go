package sequencer

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetricsReportBatchesAndQueue(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHarness(t, func(c *Config) { c.Registerer = reg })
	h.submitN(testLog, 25)
	// Publication follows the acknowledgement: wait for its first sample.
	var got map[string]float64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got = gather(t, reg)
		if got["sealtrail_publish_seconds"] >= 1 || time.Now().After(deadline) {
			break
		}
	}
	if got["sealtrail_events_sealed_total"] != 25 {
		t.Errorf("events sealed = %v, want 25", got["sealtrail_events_sealed_total"])
	}
	if got["sealtrail_batch_events"] < 1 || got["sealtrail_batches_total"] != got["sealtrail_batch_events"] {
		t.Errorf("batches %v, batch size samples %v", got["sealtrail_batches_total"], got["sealtrail_batch_events"])
	}
	if got["sealtrail_publish_seconds"] < 1 || got["sealtrail_active_streams"] != 1 {
		t.Errorf("publish samples %v, active streams %v", got["sealtrail_publish_seconds"], got["sealtrail_active_streams"])
	}
	if _, ok := got["sealtrail_queue_depth"]; !ok {
		t.Error("queue depth gauge missing")
	}
}

// gather sums each metric of reg over its series: sample counts of histograms,
// values of counters and gauges.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			switch {
			case m.GetHistogram() != nil:
				got[mf.GetName()] += float64(m.GetHistogram().GetSampleCount())
			case m.GetCounter() != nil:
				got[mf.GetName()] += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				got[mf.GetName()] += m.GetGauge().GetValue()
			}
		}
	}
	return got
}
