package sequencer

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestMetricsReportBatchesAndQueue(t *testing.T) {
	reg := prometheus.NewRegistry()
	h := newHarness(t, func(c *Config) { c.Registerer = reg })
	h.submitN(testLog, 25)
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
