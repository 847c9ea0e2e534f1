package sequencer

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the sequencer's Prometheus collectors, registered on Config.Registerer.
type metrics struct {
	batchEvents    prometheus.Histogram
	sealSeconds    prometheus.Histogram
	publishSeconds prometheus.Histogram
	roundStreams   prometheus.Histogram
	batches        *prometheus.CounterVec
	events         prometheus.Counter
}

func newMetrics(s *Sequencer, reg prometheus.Registerer) *metrics {
	m := &metrics{
		batchEvents: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sealtrail_batch_events",
			Help: "Events per sealed batch.", Buckets: prometheus.ExponentialBuckets(1, 4, 9)}),
		sealSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sealtrail_batch_seal_seconds",
			Help: "Time to seal one batch, from taking the lock to the commit.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 15)}),
		publishSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sealtrail_publish_seconds",
			Help: "Time to materialize tiles and publish the checkpoint, per publication.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 15)}),
		roundStreams: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sealtrail_publish_round_streams",
			Help: "Project-streams published together in one publication round.", Buckets: prometheus.ExponentialBuckets(1, 4, 6)}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sealtrail_batches_total",
			Help: "Batches by result: committed, or failed before the commit (nothing recorded)."}, []string{"result"}),
		events: prometheus.NewCounter(prometheus.CounterOpts{Name: "sealtrail_events_sealed_total",
			Help: "Events sealed (committed, and so acknowledged) by this process."}),
	}
	if reg != nil {
		reg.MustRegister(m.batchEvents, m.sealSeconds, m.publishSeconds, m.roundStreams, m.batches, m.events,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sealtrail_queue_depth",
				Help: "Events waiting to be sealed, over all project-streams."}, func() float64 { return float64(s.queueDepth()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sealtrail_active_streams",
				Help: "Project-streams with a running sequencer."}, func() float64 { return float64(s.activeStreams()) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sealtrail_publish_queue_streams",
				Help: "Project-streams whose publication is due, waiting for a round (the publication budget holds quiet ones back)."},
				func() float64 { return float64(s.pub.queued()) }))
		for why, reason := range takenReasons {
			reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "sealtrail_stream_publications_total",
				Help:        "Project-stream publications, by why their round took them: budget (a quiet stream, within the publication budget), busy (a tile or more to publish), close.",
				ConstLabels: prometheus.Labels{"reason": reason}}, func() float64 { return float64(s.pub.takenCount(why)) }))
		}
	}
	return m
}

func (m *metrics) sealed(events int, took time.Duration, err error) {
	if err != nil {
		m.batches.WithLabelValues("failed").Inc()
		return
	}
	m.batches.WithLabelValues("committed").Inc()
	m.batchEvents.Observe(float64(events))
	m.sealSeconds.Observe(took.Seconds())
}

// publishRound counts a publication round of streams project-streams.
func (m *metrics) publishRound(streams int) { m.roundStreams.Observe(float64(streams)) }

// queueDepth counts the events waiting to be sealed.
func (s *Sequencer) queueDepth() int {
	s.mu.Lock()
	logs := make([]*logSequencer, 0, len(s.logs))
	for _, ls := range s.logs {
		logs = append(logs, ls)
	}
	s.mu.Unlock()
	n := 0
	for _, ls := range logs {
		ls.mu.Lock()
		n += ls.npending
		ls.mu.Unlock()
	}
	return n
}

func (s *Sequencer) activeStreams() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.logs)
}
