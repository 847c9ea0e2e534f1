package httpapi

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	ingested *prometheus.CounterVec
	sealLat  prometheus.Histogram
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
	return m
}

// rateLimiter is a fixed-window counter per API key: at most limit requests per
// window. It is per process; with several replicas the effective limit is per replica.
type rateLimiter struct {
	limit  int
	window time.Duration

	mu      sync.Mutex
	start   time.Time
	counts  map[string]int
	nowFunc func() time.Time
}

func newRateLimiter(limit int, window time.Duration) *rateLimiter {
	return &rateLimiter{limit: limit, window: window, counts: map[string]int{}, nowFunc: time.Now}
}

// allow counts a request of key and reports whether it is within the limit, and if not
// how long until the window resets.
func (l *rateLimiter) allow(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.nowFunc()
	if now.Sub(l.start) >= l.window || now.Before(l.start) {
		l.start = now.Truncate(l.window)
		clear(l.counts)
	}
	if l.counts[key] >= l.limit {
		return false, l.start.Add(l.window).Sub(now)
	}
	l.counts[key]++
	return true, 0
}

// rateLimited applies the ingest rate limit of the authenticated key.
func (s *Server) rateLimited(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, wait := s.limiter.allow(apiKeyFrom(r).ID)
		if !ok {
			s.metrics.errors.WithLabelValues("rate_limited").Inc()
			writeRetry(w, http.StatusTooManyRequests, "Rate limit exceeded", wait)
			return
		}
		next.ServeHTTP(w, r)
	})
}
