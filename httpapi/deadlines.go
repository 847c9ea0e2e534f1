package httpapi

import (
	"net/http"
	"time"
)

// longRunning exempts a handler that may outlast the server's timeouts (/export
// streams a whole stream, /verify rebuilds one) from them, with a deadline of its own:
// its read deadline is cleared (these GETs have no body, and an expired read deadline
// would cancel the request's context), and its write deadline is set WriteTimeout
// ahead before each write, so a client that stops reading is cut off after
// WriteTimeout without a write.
func (s *Server) longRunning(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{}) // unsupported only on test recorders
		next.ServeHTTP(&deadlineWriter{ResponseWriter: w, rc: rc, timeout: s.cfg.WriteTimeout}, r)
	})
}

// deadlineWriter renews the connection's write deadline before each write.
type deadlineWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func (w *deadlineWriter) renew() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.timeout)) }

func (w *deadlineWriter) WriteHeader(code int) {
	w.renew()
	w.ResponseWriter.WriteHeader(code)
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.renew()
	return w.ResponseWriter.Write(p)
}

func (w *deadlineWriter) Flush() {
	w.renew()
	_ = w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
