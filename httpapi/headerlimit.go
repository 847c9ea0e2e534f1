package httpapi

import "net/http"

// HeaderReadFactor is how much more than the configured header limit the HTTP server
// itself reads (http.Server.MaxHeaderBytes) so that LimitHeaders, not net/http,
// answers most oversize headers: net/http's own 431 is plain text, written before
// any handler runs.
const HeaderReadFactor = 4

// LimitHeaders answers 431 with a JSON body, and closes the connection, when a
// request's line and headers take more than max bytes as sent (counted as net/http
// counts them: each header line with its ": " and CRLF). Headers beyond
// HeaderReadFactor times max never reach it: net/http refuses them first.
func LimitHeaders(next http.Handler, max int) http.Handler {
	if max <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headerBytes(r) > max {
			w.Header().Set("Connection", "close")
			writeError(w, http.StatusRequestHeaderFieldsTooLarge, "Request headers exceed the limit")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// headerBytes is the size of r's request line and headers as they were sent.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2
	n += len("Host: ") + len(r.Host) + 2
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	return n + 2
}
