package httpapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sealtrail/sealtrail/catalog"
)

type metrics struct {
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	ingested *prometheus.CounterVec
	sealLat  prometheus.Histogram
	// ingestedEvents is ingested's child of the events stream, looked up once.
	ingestedEvents prometheus.Counter
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sealtrail_http_requests_total",
			Help: "HTTP requests by route, method and status class."}, []string{"route", "method", "status"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sealtrail_errors_total",
			Help: "Errors by class (internal, seal, busy, rate_limited, bad_request)."}, []string{"class"}),
		ingested: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sealtrail_events_ingested_total",
			Help: "Events sealed through the API, by stream."}, []string{"stream"}),
		sealLat: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "sealtrail_ingest_seal_seconds",
			Help: "Time from a valid ingest request to its acknowledgement.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}),
	}
	reg.MustRegister(m.requests, m.errors, m.ingested, m.sealLat)
	m.ingestedEvents = m.ingested.WithLabelValues(string(catalog.StreamEvents))
	return m
}
