package httpapi

import (
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Rate limits, each a token bucket per name (see docs/api-decisions.md): a bucket
// holds up to limit tokens, refills at limit per window, and each request takes one
// (a batch of n events takes n). The buckets live in this process: with several
// replicas each enforces its own.
//
//   - ingest: per API key, RateLimit per RateWindow, or the project's override set by
//     the operator (control.SetIngestRateLimit);
//   - /verify and /export: per project, each ReadRateLimit per ReadRateWindow;
//   - failed authentication (missing, unknown or invalid API key or operator token):
//     per client address, AuthFailureLimit per AuthFailureWindow. An address without
//     tokens left is refused with 429 before its key is even looked up.

// buckets is a set of token buckets by name.
type buckets struct {
	mu    sync.Mutex
	m     map[string]*rate.Limiter
	swept time.Time
	now   func() time.Time
}

// maxBuckets is the size from which a set drops its full (idle) buckets every second
// rather than every minute.
const maxBuckets = 100_000

func newBuckets() *buckets { return &buckets{m: map[string]*rate.Limiter{}, now: time.Now} }

// bucket returns name's bucket, set to limit per window. Call with b.mu held.
func (b *buckets) bucket(name string, limit int, window time.Duration, now time.Time) *rate.Limiter {
	every := rate.Limit(float64(limit) / window.Seconds())
	l := b.m[name]
	if l == nil {
		b.sweep(now)
	}
	// A new bucket starts full; so does one whose limit changed (the project's
	// override), so that the new limit applies at once.
	if l == nil || l.Burst() != limit || l.Limit() != every {
		l = rate.NewLimiter(every, limit)
		b.m[name] = l
	}
	return l
}

// sweep drops the full buckets, a full bucket being the same as none: once a minute,
// or once a second while the set holds maxBuckets or more (at most one pass over it a
// second, however many new names arrive). Call with b.mu held.
func (b *buckets) sweep(now time.Time) {
	due := time.Minute
	if len(b.m) >= maxBuckets {
		due = time.Second
	}
	if now.Sub(b.swept) < due {
		return
	}
	b.swept = now
	for name, l := range b.m {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(b.m, name)
		}
	}
}

// take takes n tokens from name's bucket (limit per window). It reports whether they
// were there and, if not, how long until they will be. More tokens than the bucket
// holds (n > limit) never pass; the wait is then a whole window.
func (b *buckets) take(name string, limit int, window time.Duration, n int) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	l := b.bucket(name, limit, window, now)
	res := l.ReserveN(now, n)
	if !res.OK() {
		return false, window
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return false, d
	}
	return true, 0
}

// empty reports whether name's bucket has no whole token left, and if so how long
// until it has one; it takes nothing.
func (b *buckets) empty(name string, limit int, window time.Duration) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if _, ok := b.m[name]; !ok {
		return false, 0
	}
	l := b.bucket(name, limit, window, now)
	missing := 1 - l.TokensAt(now)
	if missing <= 0 {
		return false, 0
	}
	return true, time.Duration(missing / float64(l.Limit()) * float64(time.Second))
}

// tooMany answers 429 with Retry-After, without reading the body.
func (s *Server) tooMany(w http.ResponseWriter, r *http.Request, msg string, wait time.Duration) {
	s.metrics.errors.WithLabelValues("rate_limited").Inc()
	unread := leaveUnread(w, r)
	writeRetry(w, http.StatusTooManyRequests, msg, wait)
	unread()
}

// allowIngest takes n events from the ingest limit of the request's API key (the
// project's override, or RateLimit per RateWindow) and reports whether they may be
// sealed; if not it has answered 429. A batch of n events takes n at once.
func (s *Server) allowIngest(w http.ResponseWriter, r *http.Request, n int) bool {
	key := apiKeyFrom(r)
	limit := s.cfg.RateLimit
	override, err := s.cfg.Control.IngestRateLimit(r.Context(), key.ProjectID)
	if err != nil {
		s.internal(w, r, "ingest rate limit", err)
		return false
	}
	if override > 0 {
		limit = override
	}
	ok, wait := s.ingestLimits.take(key.ID, limit, s.cfg.RateWindow, n)
	if !ok {
		s.tooMany(w, r, "Rate limit exceeded", wait)
	}
	return ok
}

// rateLimited applies the ingest rate limit of the authenticated key to one event.
func (s *Server) rateLimited(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.suspended(w, r) && s.allowIngest(w, r, 1) {
			next.ServeHTTP(w, r)
		}
	})
}

// perProject applies an expensive read's limit (ReadRateLimit per ReadRateWindow) to
// the authenticated key's project.
func (s *Server) perProject(b *buckets, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok, wait := b.take(apiKeyFrom(r).ProjectID, s.cfg.ReadRateLimit, s.cfg.ReadRateWindow, 1)
		if !ok {
			s.tooMany(w, r, "Rate limit exceeded for this project; retry later", wait)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authBlocked reports whether the request's client address has used up its failed
// authentications; if so it has answered 429.
func (s *Server) authBlocked(w http.ResponseWriter, r *http.Request) bool {
	blocked, wait := s.authLimits.empty(s.limitAddress(r), s.cfg.AuthFailureLimit, s.cfg.AuthFailureWindow)
	if blocked {
		s.tooMany(w, r, "Too many failed authentications from this address; retry later", wait)
	}
	return blocked
}

// authFailed counts a failed authentication of the request's client address and
// answers 401 with msg, or 429 when the address has none left.
func (s *Server) authFailed(w http.ResponseWriter, r *http.Request, msg string) {
	ok, wait := s.authLimits.take(s.limitAddress(r), s.cfg.AuthFailureLimit, s.cfg.AuthFailureWindow, 1)
	if !ok {
		s.tooMany(w, r, "Too many failed authentications from this address; retry later", wait)
		return
	}
	s.refuse(w, r, http.StatusUnauthorized, msg)
}

// limitAddress is the client address a per-address limit counts: the address, or for
// IPv6 its /64 (one host commonly holds a whole /64).
func (s *Server) limitAddress(r *http.Request) string {
	addr := s.clientIP(r)
	ip := net.ParseIP(addr)
	if ip == nil || ip.To4() != nil {
		return addr
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

// refuse answers a request its handler will not read (failed authentication, missing
// scope) with status and msg, without reading its body.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, msg string) {
	unread := leaveUnread(w, r)
	writeError(w, status, msg)
	unread()
}

// leaveUnread prepares the answer to a request whose body will not be read: the
// connection closes after the answer, and the returned func, called once the answer
// is written, stops net/http from reading the body anyway (it reads up to 256 KB of a
// leftover body, to keep the connection, which a client trickling its body would hold
// up until the read timeout).
func leaveUnread(w http.ResponseWriter, r *http.Request) func() {
	if r.ContentLength == 0 {
		return func() {}
	}
	w.Header().Set("Connection", "close")
	return func() { _ = http.NewResponseController(w).SetReadDeadline(time.Now()) }
}
