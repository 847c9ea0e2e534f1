package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/sealtrail/sealtrail/catalog"
)

// keyDelegated marks a request that ServeDelegated authenticated: its key came from
// the caller (the dashboard's session), not from a bearer token.
const keyDelegated ctxKey = 100

// ServeDelegated serves the GET route path of /api/v1 ("/events", "/proof/inclusion",
// "/export", ...) exactly as a request with an API key of key's project and scopes
// would be served, for a caller that authenticated the user itself (the dashboard,
// whose signed-in member's role gives the scopes). Only GET and HEAD are served, so a
// delegated request never writes to the log; everything else (scopes, rate limits,
// parameters, errors) is the public API's.
func (s *Server) ServeDelegated(w http.ResponseWriter, r *http.Request, key catalog.APIKey, path string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "Method not allowed")
		return
	}
	if !strings.HasPrefix(path, "/") || strings.Contains(path, "..") || strings.Contains(path, "//") || key.ProjectID == "" {
		writeError(w, http.StatusNotFound, "Not found")
		return
	}
	ctx := context.WithValue(r.Context(), keyDelegated, true)
	ctx = context.WithValue(ctx, keyAPIKey, key)
	r2 := r.Clone(ctx)
	r2.URL.Path, r2.URL.RawPath = "/api/v1"+path, ""
	r2.RequestURI = r2.URL.RequestURI()
	r2.Header.Del("Authorization")
	s.Handler().ServeHTTP(w, r2)
}

// delegatedKey returns the key of a request that ServeDelegated serves.
func delegatedKey(r *http.Request) (catalog.APIKey, bool) {
	if d, _ := r.Context().Value(keyDelegated).(bool); !d {
		return catalog.APIKey{}, false
	}
	k, ok := r.Context().Value(keyAPIKey).(catalog.APIKey)
	return k, ok
}
