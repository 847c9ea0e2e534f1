package dashboard

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"slices"
	"strings"

	"github.com/gorilla/mux"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/control"
)

// maxFormBytes bounds a dashboard form (a hold names at most control.MaxHoldEvents
// event ids).
const maxFormBytes = 4 << 20

// newSecret returns 32 random bytes, URL-safe base64, and the SHA-256 hash stored for
// it.
func newSecret() (string, []byte, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", nil, fmt.Errorf("random secret: %w", err)
	}
	secret := base64.RawURLEncoding.EncodeToString(b[:])
	return secret, hashSecret(secret), nil
}

func hashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// operatorCookie marks the cookie value of an operator session. Such a session is
// stored under an HMAC of its secret keyed by the operator token that signed it in,
// so rotating the operator token ends every operator session at once: no row matches
// a cookie under the new token (docs/dashboard.md).
const operatorCookie = "o."

// cookieHash is the stored hash of a session cookie's value, or nil for an operator
// cookie while operator sign-in is off.
func (s *Server) cookieHash(value string) []byte {
	if !strings.HasPrefix(value, operatorCookie) {
		return hashSecret(value)
	}
	if s.cfg.OperatorToken == "" {
		return nil
	}
	m := hmac.New(sha256.New, []byte(s.cfg.OperatorToken))
	m.Write([]byte(value))
	return m.Sum(nil)
}

// cookieName is the session cookie's name: __Host- (Secure, Path=/, no Domain,
// enforced by browsers) when served over TLS.
func (s *Server) cookieName() string {
	if s.secure {
		return "__Host-sealtrail_session"
	}
	return "sealtrail_session"
}

// session returns the request's signed-in session and its hash, if any.
func (s *Server) session(r *http.Request) (catalog.Session, bool, error) {
	c, err := r.Cookie(s.cookieName())
	if err != nil || c.Value == "" || len(c.Value) > 128 {
		return catalog.Session{}, false, nil
	}
	hash := s.cookieHash(c.Value)
	if hash == nil {
		return catalog.Session{}, false, nil
	}
	sess, err := s.cfg.Store.Session(r.Context(), hash, s.cfg.Now())
	if errors.Is(err, catalog.ErrNotFound) || (err == nil && (sess.Kind == catalog.SessionOperator) != strings.HasPrefix(c.Value, operatorCookie)) {
		return catalog.Session{}, false, nil
	}
	if err != nil {
		return catalog.Session{}, false, fmt.Errorf("session: %w", err)
	}
	return sess, true, nil
}

// startSession replaces whatever session the browser had with a new one (against
// session fixation: a signed-in session's secret is never one the browser had before).
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, kind, email string) error {
	if c, err := r.Cookie(s.cookieName()); err == nil && c.Value != "" && len(c.Value) <= 128 {
		if hash := s.cookieHash(c.Value); hash != nil {
			if err := s.cfg.Store.DeleteSession(r.Context(), hash); err != nil {
				return err
			}
		}
	}
	secret, hash, err := newSecret()
	if err != nil {
		return err
	}
	if kind == catalog.SessionOperator {
		secret = operatorCookie + secret
		hash = s.cookieHash(secret)
	}
	now := s.cfg.Now()
	if err := s.cfg.Store.CreateSession(r.Context(), catalog.Session{Hash: hash, Kind: kind, Email: email,
		CreatedAt: now, ExpiresAt: now.Add(s.cfg.SessionTTL)}); err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: secret, Path: "/", MaxAge: int(s.cfg.SessionTTL.Seconds()),
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode})
	return nil
}

func (s *Server) clearCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteStrictMode})
}

// readForm parses a bounded urlencoded form, or answers 400.
func (s *Server) readForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, "Could not read the form: "+err.Error())
		return false
	}
	return true
}

// signInEmail sends a one-time sign-in link to a member's address. The answer is the
// same whether or not the address belongs to a member.
func (s *Server) signInEmail(w http.ResponseWriter, r *http.Request) {
	if !s.readForm(w, r) {
		return
	}
	email := strings.TrimSpace(r.PostForm.Get("email"))
	addr, err := mail.ParseAddress(email)
	if err != nil || addr.Address != email || len(email) > 254 {
		s.fail(w, r, http.StatusBadRequest, "Enter a plain email address (name@example.com).")
		return
	}
	if s.cfg.Mailer == nil {
		s.fail(w, r, http.StatusServiceUnavailable, "Sign-in by email is not configured on this server (no SMTP).")
		return
	}
	if !s.links.allow(email, s.cfg.Now()) {
		s.fail(w, r, http.StatusTooManyRequests, "Too many sign-in links were asked for this address; wait a few minutes and use the latest one.")
		return
	}
	members, err := s.cfg.Store.MemberProjects(r.Context(), email)
	if err != nil {
		s.internal(w, r, "member projects", err)
		return
	}
	if len(members) > 0 {
		if err := s.sendLink(r.Context(), members[0].Email); err != nil {
			s.internal(w, r, "send sign-in link", err)
			return
		}
	}
	s.render(w, r, "sent", nil, map[string]any{"Title": "Check your email", "Email": email,
		"Minutes": int(s.cfg.LinkTTL.Minutes())})
}

// sendLink stores a new link for email and mails it.
func (s *Server) sendLink(ctx context.Context, email string) error {
	secret, hash, err := newSecret()
	if err != nil {
		return err
	}
	now := s.cfg.Now()
	if err := s.cfg.Store.CreateSignInLink(ctx, catalog.SignInLink{Hash: hash, Email: email, CreatedAt: now,
		ExpiresAt: now.Add(s.cfg.LinkTTL)}); err != nil {
		return err
	}
	link := s.cfg.PublicURL + Prefix + "signin/link?token=" + url.QueryEscape(secret)
	body := fmt.Sprintf("Sign in to the Sealtrail dashboard as %s:\n\n%s\n\n"+
		"The link works once, for %d minutes. If you did not ask for it, ignore this email.\n",
		email, link, int(s.cfg.LinkTTL.Minutes()))
	return s.cfg.Mailer.Send(ctx, email, "Your Sealtrail sign-in link", body)
}

// signInLinkPage shows the emailed link's sign-in button. The GET changes nothing, so
// a mail scanner that fetches the link does not use it up.
func (s *Server) signInLinkPage(w http.ResponseWriter, r *http.Request) {
	token := r.URL.Query().Get("token")
	if token == "" || len(token) > 128 {
		s.fail(w, r, http.StatusBadRequest, "This sign-in link is incomplete; ask for a new one.")
		return
	}
	s.render(w, r, "link", nil, map[string]any{"Title": "Sign in", "Token": token})
}

// signInLink uses a sign-in link: once, before it expires, for the email it was sent
// to (whatever else the form says).
func (s *Server) signInLink(w http.ResponseWriter, r *http.Request) {
	if !s.readForm(w, r) {
		return
	}
	token := r.PostForm.Get("token")
	if token == "" || len(token) > 128 {
		s.fail(w, r, http.StatusBadRequest, "This sign-in link is incomplete; ask for a new one.")
		return
	}
	link, err := s.cfg.Store.ConsumeSignInLink(r.Context(), hashSecret(token), s.cfg.Now())
	if errors.Is(err, catalog.ErrNotFound) {
		s.fail(w, r, http.StatusBadRequest, "This sign-in link is invalid, already used or expired; ask for a new one.")
		return
	}
	if err != nil {
		s.internal(w, r, "consume sign-in link", err)
		return
	}
	if err := s.startSession(w, r, catalog.SessionMember, link.Email); err != nil {
		s.internal(w, r, "start session", err)
		return
	}
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// signInOperator signs an operator in with the operator token.
func (s *Server) signInOperator(w http.ResponseWriter, r *http.Request) {
	if !s.readForm(w, r) {
		return
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if !s.operatorTries.allow(host, s.cfg.Now()) {
		s.fail(w, r, http.StatusTooManyRequests, "Too many operator sign-in attempts from this address; wait a few minutes.")
		return
	}
	token := strings.TrimSpace(r.PostForm.Get("token"))
	if s.cfg.OperatorToken == "" || subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.OperatorToken)) != 1 {
		s.fail(w, r, http.StatusUnauthorized, "Invalid operator token.")
		return
	}
	if err := s.startSession(w, r, catalog.SessionOperator, ""); err != nil {
		s.internal(w, r, "start session", err)
		return
	}
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(s.cookieName()); err == nil && c.Value != "" && len(c.Value) <= 128 {
		if hash := s.cookieHash(c.Value); hash != nil {
			if err := s.cfg.Store.DeleteSession(r.Context(), hash); err != nil {
				s.internal(w, r, "sign out", err)
				return
			}
		}
	}
	s.clearCookie(w)
	http.Redirect(w, r, Prefix, http.StatusSeeOther)
}

// permission is what a page needs of the signed-in role.
type permission func(role string) bool

func canRead(role string) bool { return slices.Contains(control.Roles, role) || role == roleOperator }

func canVerify(role string) bool {
	return role == "owner" || role == "admin" || role == "auditor" || role == roleOperator
}

func canManage(role string) bool { return role == "owner" || role == "admin" || role == roleOperator }

// roleOperator is an operator's role in every project.
const roleOperator = "operator"

// projectCtx is a request in a project by a signed-in principal allowed there.
type projectCtx struct {
	Project catalog.Project
	Role    string
	Who     string // the member's email, or "operator"
	actor   control.Actor
}

// CanManage and CanVerify drive what the templates offer (the server checks again).
func (pc *projectCtx) CanManage() bool { return canManage(pc.Role) }

// CanVerify reports whether the role may verify and export.
func (pc *projectCtx) CanVerify() bool { return canVerify(pc.Role) }

// scopes are the API scopes of the role, for ServeDelegated.
func (pc *projectCtx) scopes() []string {
	if pc.CanVerify() {
		return []string{catalog.ScopeRead, catalog.ScopeVerify, catalog.ScopeExport}
	}
	return []string{catalog.ScopeRead}
}

type pageHandler func(w http.ResponseWriter, r *http.Request, pc *projectCtx)

// inProject authenticates the session and checks, on every request, that its member
// is (still) in the project with a role that has need.
func (s *Server) inProject(need permission, h pageHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, ok, err := s.session(r)
		if err != nil {
			s.internal(w, r, "session", err)
			return
		}
		if !ok {
			if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
				http.Redirect(w, r, Prefix, http.StatusSeeOther)
				return
			}
			s.fail(w, r, http.StatusUnauthorized, "Sign in first.")
			return
		}
		projectID := mux.Vars(r)["project"]
		pc := &projectCtx{Role: roleOperator, Who: "operator", actor: control.Actor{Type: "operator", ID: "dashboard"}}
		if sess.Kind == catalog.SessionMember {
			members, err := s.cfg.Store.MemberProjects(r.Context(), sess.Email)
			if err != nil {
				s.internal(w, r, "member projects", err)
				return
			}
			i := slices.IndexFunc(members, func(m catalog.Member) bool { return m.ProjectID == projectID })
			if i < 0 {
				s.fail(w, r, http.StatusForbidden, "You are not a member of this project.")
				return
			}
			pc.Role, pc.Who = members[i].Role, members[i].Email
			pc.actor = control.Actor{Type: "member", ID: members[i].Email}
		}
		p, err := s.cfg.Control.Project(r.Context(), projectID)
		if err != nil {
			s.controlError(w, r, "project", err)
			return
		}
		pc.Project = p
		if !need(pc.Role) {
			s.fail(w, r, http.StatusForbidden, "Your role ("+pc.Role+") does not allow this.")
			return
		}
		if r.Method == http.MethodPost && !s.readForm(w, r) {
			return
		}
		h(w, r, pc)
	})
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}
