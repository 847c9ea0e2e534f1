// Package dashboard is Sealtrail's web dashboard, served by sealtraild on the same
// origin as the API under /dashboard/: html/template pages from an embed.FS, plain
// forms and one small script (no build step), for project members signed in by an
// emailed one-time link and for operators signed in with the operator token.
//
// Every change goes through the control plane (control.Service) with the signed-in
// member (or the operator) as the actor, so it is sealed in project_audit. Every read
// of the log (events, proofs, heads, anchors, verify, export) is served by the public
// API's own handlers (httpapi.Server.ServeDelegated) with the scopes of the member's
// role. Roles are enforced here, on the server, for every request: owner and admin
// manage API keys, members, signing keys, retention and legal holds; every member
// reads events; auditors (and owners and admins) also verify and export.
//
// Requests that change anything are POSTs behind http.CrossOriginProtection (a
// cross-site POST is refused with 403); the session cookie is HttpOnly, SameSite=Strict
// and Secure when the dashboard is served over TLS. Sessions and sign-in links live in
// the catalog as hashes of their secrets, so they hold across replicas.
package dashboard

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/control"
)

// Mailer sends one plain-text email. Send returns once the message is handed over;
// it may be called concurrently. sealtraild passes the mail package's durable queue
// (*mail.Queue), whose Send wakes its runner so a sign-in link goes out at once.
type Mailer interface {
	Send(ctx context.Context, to, subject, textBody string) error
}

// Store is the catalog side of the dashboard: sign-in links, sessions, and the
// projects an email is a member of. Both catalog drivers implement it.
type Store interface {
	// CreateSignInLink stores a link (by the hash of its secret).
	CreateSignInLink(ctx context.Context, l catalog.SignInLink) error
	// ConsumeSignInLink marks an unused, unexpired link used and returns it, atomically
	// across replicas; otherwise catalog.ErrNotFound.
	ConsumeSignInLink(ctx context.Context, hash []byte, now time.Time) (catalog.SignInLink, error)
	CreateSession(ctx context.Context, s catalog.Session) error
	// Session returns an unexpired session, or catalog.ErrNotFound.
	Session(ctx context.Context, hash []byte, now time.Time) (catalog.Session, error)
	DeleteSession(ctx context.Context, hash []byte) error
	// MemberProjects lists email's memberships (case-insensitive).
	MemberProjects(ctx context.Context, email string) ([]catalog.Member, error)
}

// API serves the public API's read routes for an already authenticated principal
// (*httpapi.Server).
type API interface {
	ServeDelegated(w http.ResponseWriter, r *http.Request, key catalog.APIKey, path string)
}

// Config configures the dashboard.
type Config struct {
	Control *control.Service
	Store   Store
	API     API
	// Mailer sends sign-in links; without one, members cannot sign in (operators can).
	Mailer Mailer
	// OperatorToken signs operators in; empty disables operator sign-in.
	OperatorToken string
	// PublicURL is the service's address as browsers reach it (e.g.
	// https://audit.example.com), the base of emailed links; never taken from a
	// request's Host header. An https URL also makes the session cookie Secure.
	PublicURL string
	// LinkTTL is how long a sign-in link works (default 15 minutes); SessionTTL how
	// long a session lasts (default 12 hours).
	LinkTTL, SessionTTL time.Duration
	Logger              *slog.Logger
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Server is the dashboard.
type Server struct {
	cfg    Config
	pages  map[string]*template.Template
	static http.Handler
	router http.Handler
	secure bool
	links  *linkLimit
	// operatorTries bounds operator sign-in attempts per client address.
	operatorTries *linkLimit
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// LinksPerAddress is how many sign-in links one address may ask for per LinkTTL, per
// replica.
const LinksPerAddress = 5

// OperatorTriesPerAddress is how many operator sign-ins one client address may try per
// 15 minutes, per replica.
const OperatorTriesPerAddress = 10

// Prefix is where the dashboard is served.
const Prefix = "/dashboard/"

// New returns the dashboard.
func New(cfg Config) (*Server, error) {
	if cfg.Control == nil || cfg.Store == nil || cfg.API == nil {
		return nil, errors.New("dashboard: Control, Store and API are required")
	}
	u, err := url.Parse(cfg.PublicURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("dashboard: public URL %q must be http(s)://host[:port]", cfg.PublicURL)
	}
	cfg.PublicURL = u.Scheme + "://" + u.Host
	if cfg.LinkTTL <= 0 {
		cfg.LinkTTL = 15 * time.Minute
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = 12 * time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("dashboard: static files: %w", err)
	}
	s := &Server{cfg: cfg, pages: pages, secure: u.Scheme == "https", links: newLinkLimit(LinksPerAddress, cfg.LinkTTL),
		operatorTries: newLinkLimit(OperatorTriesPerAddress, 15*time.Minute),
		static:        http.StripPrefix(Prefix+"static/", http.FileServerFS(sub))}
	s.router = s.routes()
	return s, nil
}

// Handler returns the dashboard's handler, to be mounted at Prefix.
func (s *Server) Handler() http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusForbidden, "Cross-origin request refused: changes must come from this dashboard's own pages.")
	}))
	return securityHeaders(cop.Handler(s.router))
}

// securityHeaders sets what every dashboard answer carries: no caching (pages show
// secrets once), no framing, no referrer (a sign-in link's token must not leak), and a
// content security policy that allows only this origin's own script and style.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
			"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		next.ServeHTTP(w, r)
	})
}

func (s *Server) routes() http.Handler {
	r := mux.NewRouter()
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "Not found")
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusMethodNotAllowed, "Method not allowed")
	})
	d := r.PathPrefix("/dashboard").Subrouter()
	d.PathPrefix("/static/").Handler(s.static).Methods(http.MethodGet, http.MethodHead)
	d.HandleFunc("/", s.home).Methods(http.MethodGet)
	d.HandleFunc("/signin/email", s.signInEmail).Methods(http.MethodPost)
	d.HandleFunc("/signin/link", s.signInLinkPage).Methods(http.MethodGet)
	d.HandleFunc("/signin/link", s.signInLink).Methods(http.MethodPost)
	d.HandleFunc("/signin/operator", s.signInOperator).Methods(http.MethodPost)
	d.HandleFunc("/signout", s.signOut).Methods(http.MethodPost)

	p := d.PathPrefix("/p/{project}").Subrouter()
	get := func(path string, need permission, h pageHandler) {
		p.Handle(path, s.inProject(need, h)).Methods(http.MethodGet)
	}
	post := func(path string, need permission, h pageHandler) {
		p.Handle(path, s.inProject(need, h)).Methods(http.MethodPost)
	}
	get("/", canRead, s.overview)
	get("/events", canRead, s.page("events"))
	get("/verify", canVerify, s.page("verify"))
	// Any method: ServeDelegated answers all but GET and HEAD with 405.
	p.Handle("/api/{path:.+}", s.inProject(canRead, s.apiRead))
	get("/keys", canManage, s.keysPage)
	post("/keys", canManage, s.createKey)
	post("/keys/{key}/revoke", canManage, s.revokeKey)
	get("/members", canManage, listPage(s, "members", "Members", s.cfg.Control.ListMembers, map[string]any{"Roles": control.Roles}))
	post("/members", canManage, s.addMember)
	post("/members/remove", canManage, s.removeMember)
	get("/signing-keys", canManage, listPage(s, "signing-keys", "Keys", s.cfg.Control.ListSigningKeys, nil))
	post("/signing-keys", canManage, s.addSigningKey)
	post("/signing-keys/{key}/revoke", canManage, s.revokeSigningKey)
	get("/retention", canManage, listPage(s, "retention", "Retention", s.cfg.Control.ListRetention, map[string]any{"Max": control.MaxRetentionDays}))
	post("/retention", canManage, s.setRetention)
	get("/holds", canRead, listPage(s, "holds", "Holds", s.cfg.Control.ListHolds, nil))
	post("/holds", canManage, s.createHold)
	get("/holds/{hold}", canRead, s.holdPage)
	post("/holds/{hold}/release", canManage, s.releaseHold)
	get("/digests", canRead, s.digestsPage)
	post("/digests/schedule", canManage, s.setDigestSchedule)
	post("/digests/me", canRead, s.setDigestOptIn)
	return r
}

// fail answers an error: an HTML page to a browser, a JSON body to anything else.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if strings.Contains(r.Header.Get("Accept"), "text/html") {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		_ = s.pages["error"].ExecuteTemplate(w, "layout", map[string]any{"Status": status, "Message": msg,
			"Title": http.StatusText(status)})
		return
	}
	writeJSONError(w, status, msg)
}

// controlError answers a control-plane error with its status; anything unexpected is
// logged and answered 500 without details.
func (s *Server) controlError(w http.ResponseWriter, r *http.Request, what string, err error) {
	switch {
	case errors.Is(err, control.ErrInvalid):
		s.fail(w, r, http.StatusBadRequest, err.Error())
	case errors.Is(err, control.ErrNotFound):
		s.fail(w, r, http.StatusNotFound, err.Error())
	case errors.Is(err, control.ErrExists), errors.Is(err, control.ErrState):
		s.fail(w, r, http.StatusConflict, err.Error())
	default:
		s.internal(w, r, what, err)
	}
}

func (s *Server) internal(w http.ResponseWriter, r *http.Request, what string, err error) {
	s.cfg.Logger.ErrorContext(r.Context(), "dashboard: "+what+" failed", "err", err)
	s.fail(w, r, http.StatusInternalServerError, "Internal error")
}
