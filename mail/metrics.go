package mail

import "github.com/prometheus/client_golang/prometheus"

// metrics are the mail package's Prometheus collectors, registered on the
// Registerer of QueueConfig (and shared by the Digester of that queue).
type metrics struct {
	deliveries *prometheus.CounterVec
	digests    prometheus.Counter
}

// Delivery results, the label of sealtrail_mail_deliveries_total.
const (
	resultSent    = "sent"    // accepted by the SMTP server
	resultRetry   = "retry"   // failed, rescheduled
	resultFailed  = "failed"  // given up: refused for good, or too old
	resultUnsaved = "unsaved" // sent, but recording it failed (may be sent again)
)

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sealtrail_mail_deliveries_total",
			Help: "Mail delivery attempts by this process, by result: sent, retry, failed (given up), unsaved (sent but not recorded)."},
			[]string{"result"}),
		digests: prometheus.NewCounter(prometheus.CounterOpts{Name: "sealtrail_digests_queued_total",
			Help: "Project digests this process built and queued (one per project and period across replicas)."}),
	}
	for _, r := range []string{resultSent, resultRetry, resultFailed, resultUnsaved} {
		m.deliveries.WithLabelValues(r)
	}
	if reg != nil {
		reg.MustRegister(m.deliveries, m.digests)
	}
	return m
}
