package main

import (
	"net/http"
)

// exactAPI is what apiFirst needs of the API (*httpapi.Server).
type exactAPI interface {
	Handler() http.Handler
	ExactRoute(path string) bool
}

// apiFirst is the front of the HTTP server: a request for one of the API's routes
// without path variables (httpapi.Server.ExactRoute: ingest, queries, proofs) goes to
// the API's handler straight, everything else to rest (the operations and dashboard
// muxes, then the API). Both http.ServeMux in rest would send such a request to the
// API anyway (their own patterns are other paths, and an exact route's path is clean,
// so no redirect applies); matching it through them had cost two pattern matches and
// their allocations on every ingest. With tracing on, every request goes through rest,
// whose otelhttp handler starts the request's server span.
func (o *ops) apiFirst(rest http.Handler, api exactAPI) http.Handler {
	if o.tracer != nil {
		return rest
	}
	h := api.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect && api.ExactRoute(r.URL.Path) {
			h.ServeHTTP(w, r)
			return
		}
		rest.ServeHTTP(w, r)
	})
}
