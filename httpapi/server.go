// Package httpapi serves Sealtrail over HTTP: the public /api/v1 routes (authenticated
// with project API keys and scopes), the operator /admin/v1 routes (authenticated with
// the operator token), health checks and Prometheus metrics.
package httpapi

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	sumdb "golang.org/x/mod/sumdb/tlog"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/control"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tiles"
)

// Sequencer is what the API needs of the sequencer: sealing, and reading sealed
// events, trees and proofs back.
type Sequencer interface {
	Submit(ctx context.Context, log catalog.LogID, e sequencer.Entry) (sequencer.Result, error)
	// SubmitMany seals es in order, with one result and one error per entry.
	SubmitMany(ctx context.Context, log catalog.LogID, es []sequencer.Entry) ([]sequencer.Result, []error)
	Tree(ctx context.Context, log catalog.LogID) (tiles.Tree, error)
	Proofs(ctx context.Context, log catalog.LogID) (*tiles.Reader, tiles.Tree, error)
	// EventSequence is the sequence of the committed event id (an inclusion proof's
	// leaf), or an error wrapping catalog.ErrNotFound.
	EventSequence(ctx context.Context, log catalog.LogID, id string) (uint64, error)
	// ProofsOver is Proofs over a committed tree of at least size leaves, or the live
	// one if none is that large.
	ProofsOver(ctx context.Context, log catalog.LogID, size uint64) (*tiles.Reader, tiles.Tree, error)
	Materialize(ctx context.Context, log catalog.LogID) (tiles.Tree, error)
	TileData(ctx context.Context, log catalog.LogID, t sumdb.Tile) ([]byte, error)
	Events(ctx context.Context, log catalog.LogID, seqs []uint64) ([]sequencer.Stored, error)
	Rebuild(ctx context.Context, log catalog.LogID, signingKeys func(string) []ed25519.PublicKey) (sequencer.RebuildResult, error)
}

// Catalog is what the API reads from the catalog directly.
type Catalog interface {
	ListSigningKeys(ctx context.Context, projectID string) ([]catalog.SigningKey, error)
	SigningKey(ctx context.Context, projectID, keyID string) (catalog.SigningKey, error)
	EventByID(ctx context.Context, log catalog.LogID, id string) (catalog.Event, error)
	QueryEvents(ctx context.Context, q catalog.Query) ([]catalog.Event, error)
	ListTreeHeads(ctx context.Context, log catalog.LogID, limit int) ([]catalog.TreeHead, error)
}

// Config configures a Server.
type Config struct {
	Control   *control.Service
	Sequencer Sequencer
	Catalog   Catalog
	// Key is the service signing key (tree heads, receipts).
	Key ed25519.PrivateKey
	// Origin is the service origin of checkpoints (GET /api/v1/checkpoint-key).
	Origin string
	// Store serves the tlog-tiles read path (checkpoints, tiles, entry bundles).
	Store tiles.Store
	// OperatorToken authenticates /admin/v1; empty disables the operator API.
	OperatorToken string
	// SIEM manages SIEM destinations under /admin/v1 (nil: those routes answer 404).
	SIEM SIEM
	// Ready reports whether the service can take traffic (for /readyz).
	Ready func(ctx context.Context) error
	// RateLimit is the ingest limit per API key per RateWindow (defaults: the spec's
	// 500 per 10 s); a project's override (control.SetIngestRateLimit) replaces
	// RateLimit for its keys. The limits are token buckets, per process (limits.go).
	RateLimit  int
	RateWindow time.Duration
	// ReadRateLimit bounds each of /verify and /export per project per ReadRateWindow
	// (defaults 10 per minute): both read a whole stream.
	ReadRateLimit  int
	ReadRateWindow time.Duration
	// AuthFailureLimit bounds failed authentications (missing, unknown or invalid API
	// key or operator token) per client address per AuthFailureWindow (defaults 60 per
	// minute).
	AuthFailureLimit  int
	AuthFailureWindow time.Duration
	// WriteTimeout is the server's write timeout (default 60 s). /export and /verify,
	// which may run longer, are exempt: they clear the read deadline and set the write
	// deadline WriteTimeout ahead before each write.
	WriteTimeout time.Duration
	// MaxBodyBytes bounds a request body (default 1 MiB), and each event of a batch.
	MaxBodyBytes int64
	// MaxBatchEvents bounds the events of one POST /log/batch (default 1,000), and
	// MaxBatchBodyBytes its body (default 16 MiB).
	MaxBatchEvents    int
	MaxBatchBodyBytes int64
	// SealTimeout bounds how long an ingest waits for its event to be sealed (default
	// 30 s).
	SealTimeout time.Duration
	// TrustProxyHeaders takes the client address from the last X-Forwarded-For entry
	// (set it only behind one proxy that sets or appends that header); otherwise the
	// header is ignored.
	TrustProxyHeaders bool
	Logger            *slog.Logger
	Registry          *prometheus.Registry
	// KEK drives key-encryption-key rotation (/admin/v1/kek); nil answers 404 there.
	KEK KEKRotator
}

// Server is the HTTP API.
type Server struct {
	cfg                                                  Config
	ingestLimits, verifyLimits, exportLimits, authLimits *buckets
	metrics                                              *metrics
	router                                               *mux.Router
	exact                                                map[string]http.Handler // "METHOD path" of the API routes without variables
	exactPaths                                           map[string]bool         // their paths
}

// New returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.Control == nil || cfg.Sequencer == nil || cfg.Catalog == nil || cfg.Key == nil || cfg.Store == nil {
		return nil, errors.New("httpapi: Control, Sequencer, Catalog, Key and Store are required")
	}
	if cfg.RateLimit <= 0 {
		cfg.RateLimit = 500
	}
	if cfg.RateWindow <= 0 {
		cfg.RateWindow = 10 * time.Second
	}
	if cfg.ReadRateLimit <= 0 {
		cfg.ReadRateLimit = 10
	}
	if cfg.ReadRateWindow <= 0 {
		cfg.ReadRateWindow = time.Minute
	}
	if cfg.AuthFailureLimit <= 0 {
		cfg.AuthFailureLimit = 60
	}
	if cfg.AuthFailureWindow <= 0 {
		cfg.AuthFailureWindow = time.Minute
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = time.Minute
	}
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = 1 << 20
	}
	if cfg.MaxBatchEvents <= 0 {
		cfg.MaxBatchEvents = 1000
	}
	if cfg.MaxBatchBodyBytes <= 0 {
		cfg.MaxBatchBodyBytes = 16 << 20
	}
	if cfg.SealTimeout <= 0 {
		cfg.SealTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	s := &Server{cfg: cfg, ingestLimits: newBuckets(), verifyLimits: newBuckets(), exportLimits: newBuckets(),
		authLimits: newBuckets(), metrics: newMetrics(cfg.Registry)}
	s.routes()
	return s, nil
}

// Handler returns the server's root handler.
func (s *Server) Handler() http.Handler {
	return s.withRequestLog(withStorableURL(http.HandlerFunc(s.dispatch)))
}

// dispatch serves a request for an API route without path variables (ingest, proofs,
// queries) from a map, and anything else through the router: matching the router's
// route list took a few microseconds of every ingest. Only an exact, clean path and
// the route's own method take the map; every other request (another method: 405, an
// unclean path: the router's redirect) gets the router's answer as before.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	if h, ok := s.exact[r.Method+" "+r.URL.Path]; ok {
		if info, ok := r.Context().Value(keyRequestID).(*requestInfo); ok {
			info.route = r.URL.Path
		}
		h.ServeHTTP(w, r)
		return
	}
	s.router.ServeHTTP(w, r)
}

// ExactRoute reports whether path is the path of an API route without path variables
// (POST /api/v1/log among them): a clean path that Handler serves from a map, so that
// a front of the server (sealtraild's) may hand such a request to Handler straight.
func (s *Server) ExactRoute(path string) bool { return s.exactPaths[path] }

func (s *Server) routes() {
	r := mux.NewRouter()
	r.Use(noteRoute)
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { writeError(w, http.StatusNotFound, "Not found") })
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed")
	})
	r.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}).Methods(http.MethodGet)
	r.HandleFunc("/readyz", s.readyz).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/openapi.json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(OpenAPI)
	}).Methods(http.MethodGet)
	r.HandleFunc("/api/v1/checkpoint-key", s.checkpointKey).Methods(http.MethodGet)                        // public: checkpointkey.go
	r.HandleFunc("/public/v1/{projectId}/{stream}/checkpoint", s.publicTlogObject).Methods(http.MethodGet) // publicread.go
	r.HandleFunc("/public/v1/{projectId}/{stream}/{path:tile/.+}", s.publicTlogObject).Methods(http.MethodGet)
	r.Handle("/metrics", promhttp.HandlerFor(s.cfg.Registry, promhttp.HandlerOpts{})).Methods(http.MethodGet)

	api := r.PathPrefix("/api/v1").Subrouter()
	apiRoutes := []struct {
		path, method, scope string
		h                   http.Handler
	}{
		{"/log", http.MethodPost, catalog.ScopeWrite, s.rateLimited(http.HandlerFunc(s.ingest))},
		{"/log/batch", http.MethodPost, catalog.ScopeWrite, s.rateLimited(http.HandlerFunc(s.ingestBatch))},
		{"/events", http.MethodGet, catalog.ScopeRead, http.HandlerFunc(s.events)},
		{"/export", http.MethodGet, catalog.ScopeExport, s.perProject(s.exportLimits, s.longRunning(http.HandlerFunc(s.export)))},
		{"/verify", http.MethodGet, catalog.ScopeVerify, s.perProject(s.verifyLimits, s.longRunning(http.HandlerFunc(s.verify)))},
		{"/root", http.MethodGet, catalog.ScopeVerify, http.HandlerFunc(s.root)},
		{"/proof/inclusion", http.MethodGet, catalog.ScopeVerify, http.HandlerFunc(s.inclusion)},
		{"/proof/consistency", http.MethodGet, catalog.ScopeVerify, http.HandlerFunc(s.consistency)},
		{"/anchors", http.MethodGet, catalog.ScopeVerify, http.HandlerFunc(s.anchors)},
		{"/legal-holds/{holdId}/proof", http.MethodGet, catalog.ScopeRead, http.HandlerFunc(s.holdProof)},
		{"/tlog/{stream}/checkpoint", http.MethodGet, catalog.ScopeVerify, http.HandlerFunc(s.tlogObject)},
		{"/tlog/{stream}/{path:tile/.+}", http.MethodGet, catalog.ScopeVerify, http.HandlerFunc(s.tlogObject)},
	}
	s.exact, s.exactPaths = map[string]http.Handler{}, map[string]bool{}
	for _, rt := range apiRoutes {
		h := s.apiKey(rt.scope, rt.h)
		api.Handle(rt.path, h).Methods(rt.method)
		if !strings.Contains(rt.path, "{") {
			s.exact[rt.method+" /api/v1"+rt.path] = h
			s.exactPaths["/api/v1"+rt.path] = true
		}
	}
	// Another method of a known path is 405 with Allow (a gorilla/mux 1.8.1 subrouter
	// would answer 404); these routes come last, so they match only what the routes
	// above did not. Each public path has one method.
	for _, rt := range apiRoutes {
		api.Handle(rt.path, methodNotAllowed([]string{rt.method}))
	}

	if s.cfg.OperatorToken != "" {
		s.adminRoutes(r.PathPrefix("/admin/v1").Subrouter())
	}
	s.router = r
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Ready != nil {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := s.cfg.Ready(ctx); err != nil {
			writeError(w, http.StatusServiceUnavailable, "Not ready: "+err.Error())
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

type ctxKey int

const (
	keyAPIKey ctxKey = iota
	keyRequestID
)

// apiKeyFrom returns the authenticated key of a request that passed apiKey.
func apiKeyFrom(r *http.Request) catalog.APIKey {
	if info := infoFrom(r); info != nil && info.authed {
		return info.key
	}
	k, _ := r.Context().Value(keyAPIKey).(catalog.APIKey)
	return k
}

// infoFrom is the request's requestInfo (set by withRequestLog), or nil.
func infoFrom(r *http.Request) *requestInfo {
	info, _ := r.Context().Value(keyRequestID).(*requestInfo)
	return info
}

// apiKey authenticates the bearer API key and requires scope, before anything reads
// the request body: a refused request's body is never read.
func (s *Server) apiKey(scope string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if k, ok := delegatedKey(r); ok { // authenticated by the caller of ServeDelegated
			if !k.HasScope(scope) {
				s.refuse(w, r, http.StatusForbidden, "Your role does not allow "+scope)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if s.authBlocked(w, r) {
			return
		}
		token, ok := bearer(r)
		if !ok {
			s.authFailed(w, r, "Missing API key")
			return
		}
		k, err := s.cfg.Control.Authenticate(r.Context(), token)
		if errors.Is(err, control.ErrBadKey) {
			s.authFailed(w, r, "Invalid API key")
			return
		}
		if err != nil {
			s.internal(w, r, "authenticate", err)
			return
		}
		if !k.HasScope(scope) {
			s.refuse(w, r, http.StatusForbidden, "API key missing "+scope+" scope")
			return
		}
		if info := infoFrom(r); info != nil {
			// The key rides in the request's info: no second context and request copy.
			info.key, info.authed = k, true
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), keyAPIKey, k)))
	})
}

// OperatorOnly is the operator-token check of /admin/v1 for a handler served beside
// the API (sealtraild's pprof): a failure counts against the client address's
// failed-authentication budget, shared with the API's own routes.
func (s *Server) OperatorOnly(next http.Handler) http.Handler { return s.operator(next) }

// operator authenticates the operator token.
func (s *Server) operator(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.authBlocked(w, r) {
			return
		}
		token, ok := bearer(r)
		if !ok {
			s.authFailed(w, r, "Missing operator token")
			return
		}
		if subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.OperatorToken)) != 1 {
			s.authFailed(w, r, "Invalid operator token")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// internal logs err and answers 500 without revealing it.
func (s *Server) internal(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.cfg.Logger.ErrorContext(r.Context(), what+" failed", "err", err, "request_id", requestID(r))
	s.metrics.errors.WithLabelValues("internal").Inc()
	writeError(w, http.StatusInternalServerError, "Internal error")
}

func requestID(r *http.Request) string {
	if info := infoFrom(r); info != nil {
		return info.id
	}
	return ""
}

// requestInfo is what withRequestLog learns about a request: its id, the route
// template the router matched (noted by noteRoute, so the router matches only once),
// and the API key apiKey authenticated (authed; apiKeyFrom reads it).
type requestInfo struct {
	id, route string
	key       catalog.APIKey
	authed    bool
}

// noteRoute is router middleware: it records the matched route's template for the
// request log and the request metrics.
func noteRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info, ok := r.Context().Value(keyRequestID).(*requestInfo); ok {
			if rt := mux.CurrentRoute(r); rt != nil {
				if t, err := rt.GetPathTemplate(); err == nil {
					info.route = t
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusRecorder) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// withRequestLog gives each request an id (X-Request-Id, echoed back), logs it, and
// counts it.
func (s *Server) withRequestLog(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if id == "" || len(id) > 128 {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = hex.EncodeToString(b[:])
		}
		w.Header().Set("X-Request-Id", id)
		// The recorder and the info in one allocation.
		lr := &struct {
			rec  statusRecorder
			info requestInfo
		}{statusRecorder{ResponseWriter: w}, requestInfo{id: id, route: "other"}}
		rec, info := &lr.rec, &lr.info
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), keyRequestID, info)))
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		s.metrics.requests.WithLabelValues(info.route, r.Method, statusClass(rec.status)).Inc()
		// The record goes to the handler straight, without a caller's PC: the request
		// line's source is always this function, and Logger.LogAttrs's
		// runtime.Callers was a fifth of the line's cost.
		if h, ctx := s.cfg.Logger.Handler(), r.Context(); h.Enabled(ctx, slog.LevelInfo) {
			now := time.Now()
			line := slog.NewRecord(now, slog.LevelInfo, "request", 0)
			line.AddAttrs(slog.String("request_id", id), slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.Int("status", rec.status), slog.Duration("duration", now.Sub(start)))
			_ = h.Handle(ctx, line)
		}
	})
}

// statusClasses are the status classes' labels, built once rather than per request.
var statusClasses = [...]string{"0xx", "1xx", "2xx", "3xx", "4xx", "5xx", "6xx", "7xx", "8xx", "9xx"}

func statusClass(code int) string {
	if c := code / 100; c >= 0 && c < len(statusClasses) {
		return statusClasses[c]
	}
	return string(rune('0'+code/100)) + "xx"
}
