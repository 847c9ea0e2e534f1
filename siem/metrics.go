package siem

import "github.com/prometheus/client_golang/prometheus"

// metrics are the runner's Prometheus collectors, registered on
// RunnerConfig.Registerer. Labels are the destination kind only: destinations are
// per project and unbounded in number, so their state is read from the operator API
// (cursor, attempts, last error), not from metrics.
type metrics struct {
	delivered  *prometheus.CounterVec
	failures   *prometheus.CounterVec
	deadLetter *prometheus.CounterVec
	running    prometheus.GaugeFunc
}

func newMetrics(r *Runner, reg prometheus.Registerer) *metrics {
	m := &metrics{
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sealtrail_siem_events_delivered_total",
			Help: "Events a SIEM receiver acknowledged (resends after a crash count again), by destination kind."}, []string{"kind"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sealtrail_siem_delivery_failures_total",
			Help: "Failed delivery attempts, by destination kind."}, []string{"kind"}),
		deadLetter: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sealtrail_siem_dead_letters_total",
			Help: "Destinations this process moved to dead_letter, by destination kind."}, []string{"kind"}),
		running: prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "sealtrail_siem_destinations_delivering",
			Help: "Destinations this process holds the lease of and delivers."}, func() float64 { return float64(r.delivering()) }),
	}
	if reg != nil {
		reg.MustRegister(m.delivered, m.failures, m.deadLetter, m.running)
	}
	return m
}
