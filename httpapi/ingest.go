package httpapi

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tlog"
)

// ingestResult is the 202 body of POST /api/v1/log.
type ingestResult struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// The header values of every ingest's answer, shared by all of them: net/http only
// reads a handler's header values (Set and Add replace or reallocate the slice).
var (
	sealedContentType  = []string{"application/json"}
	sealedCacheControl = []string{"no-store"}
)

// writeSealed answers 202 with the ingestResult of a sealed event: the bytes
// writeJSON would write, without its encoder (the answer of every ingest).
func writeSealed(w http.ResponseWriter, id string) {
	h := w.Header()
	h["Content-Type"] = sealedContentType
	h["Cache-Control"] = sealedCacheControl
	w.WriteHeader(http.StatusAccepted)
	b := make([]byte, 0, 64+len(id))
	b = append(b, `{"id":`...)
	b = tlog.AppendJCSString(b, id)
	b = append(b, ",\"status\":\"sealed\"}\n"...)
	_, _ = w.Write(b)
}

// ingestLimits bound the shape of a request body (docs/api-decisions.md).
var ingestLimits = tlog.Limits{MaxDepth: maxJSONDepth, MaxMembers: maxObjectMembers}

// readBody reads a JSON body of at most limit bytes and returns it in RFC 8785 form,
// or writes the 400/408/413 and returns false.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	body, ok := s.readAll(w, r, limit)
	if !ok {
		return nil, false
	}
	if tlog.IsCanonicalLimited(body, ingestLimits) {
		return body, true // the clients send canonical text: no copy to make
	}
	canon, err := tlog.CanonicalizeLimited(body, ingestLimits)
	if err != nil {
		s.metrics.errors.WithLabelValues("bad_request").Inc()
		writeError(w, http.StatusBadRequest, "Invalid JSON: "+strings.TrimPrefix(err.Error(), "jcs: "))
		return nil, false
	}
	return canon, true
}

// readAll reads a body of at most limit bytes, or writes the 400/408/413 and returns
// false. A body that does not arrive before the server's read timeout is 408, and the
// connection is closed.
func (s *Server) readAll(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	body, err := readSized(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit)
	var tooBig *http.MaxBytesError
	var netErr net.Error
	switch {
	case err == nil:
		return body, true
	case errors.As(err, &tooBig):
		writeError(w, http.StatusRequestEntityTooLarge, "Request body exceeds the limit")
	case errors.As(err, &netErr) && netErr.Timeout():
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestTimeout, "Request body not received in time")
	default:
		writeError(w, http.StatusBadRequest, "Could not read the request body")
	}
	return nil, false
}

// readSized is io.ReadAll with its buffer sized once from the request's
// Content-Length when it is known and within limit (one byte more, so the end of the
// body is seen without growing it).
func readSized(rd io.Reader, contentLength, limit int64) ([]byte, error) {
	if contentLength <= 0 || contentLength > limit {
		return io.ReadAll(rd)
	}
	b := make([]byte, 0, contentLength+1)
	for {
		n, err := rd.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) { // more than announced: net/http refuses that, but be safe
			rest, err := io.ReadAll(rd)
			return append(b, rest...), err
		}
	}
}

// ingest is POST /api/v1/log.
func (s *Server) ingest(w http.ResponseWriter, r *http.Request) {
	key := apiKeyFrom(r)
	canon, ok := s.readBody(w, r, s.cfg.MaxBodyBytes)
	if !ok {
		return
	}
	in, errs := parseEvent(canon)
	if errs != nil {
		s.metrics.errors.WithLabelValues("bad_request").Inc()
		writeDetails(w, http.StatusBadRequest, "Invalid event", errs)
		return
	}
	entry, status, msg := s.prepare(r, key.ProjectID, in)
	if status != 0 {
		label := "bad_request"
		if status == http.StatusInternalServerError {
			label = "internal"
		}
		s.metrics.errors.WithLabelValues(label).Inc()
		writeError(w, status, msg)
		return
	}
	s.submit(w, r, catalog.LogID{ProjectID: key.ProjectID, Stream: catalog.StreamEvents}, entry)
}

// prepare applies the signing rules and builds the entry to seal. On failure it
// returns the status and message to answer with.
func (s *Server) prepare(r *http.Request, projectID string, in *eventInput) (sequencer.Entry, int, string) {
	keys, err := s.cfg.Control.IngestSigningKeys(r.Context(), projectID)
	if err != nil {
		s.cfg.Logger.ErrorContext(r.Context(), "signing keys failed", "err", err, "request_id", requestID(r))
		return sequencer.Entry{}, http.StatusInternalServerError, "Internal error"
	}
	return s.prepareWith(&enrichment{r: r}, keys, in)
}

// prepareWith is prepare with the project's signing keys already read, and the
// request's enrichment.
func (s *Server) prepareWith(en *enrichment, keys []catalog.SigningKey, in *eventInput) (sequencer.Entry, int, string) {
	signed := in.signingKeyID != "" || in.signature != ""
	if (in.signingKeyID == "") != (in.signature == "") {
		return sequencer.Entry{}, http.StatusBadRequest, "signingKeyId and signature must be sent together"
	}
	requireSigned := false
	for _, k := range keys {
		if k.State() == catalog.KeyActive {
			requireSigned = true
		}
	}
	e := sequencer.Entry{Index: sequencer.Index{Action: in.action, Status: in.status,
		ActorType: in.actor.Type, ActorID: in.actor.ID}}
	if in.target != nil {
		e.Index.TargetType, e.Index.TargetID = in.target.Type, in.target.ID
	}
	if !signed {
		if requireSigned {
			return e, http.StatusBadRequest, "This project requires signed events (signingKeyId and signature)"
		}
		if in.id != "" || in.nonce != "" {
			return e, http.StatusBadRequest, "id and nonce are only accepted on signed events"
		}
		// Server enrichment, for unsigned events only: the default status and the
		// request's attribution, where the client did not give its own.
		if in.status == "" {
			in.members.set("status", successJSON)
			e.Index.Status = "success"
		}
		ip, ua := en.values(s)
		if _, ok := in.members.get("ipAddress"); !ok && ip != nil {
			in.members.set("ipAddress", ip)
		}
		if _, ok := in.members.get("userAgent"); !ok && ua != nil {
			in.members.set("userAgent", ua)
		}
		e.Payload = en.payload(in)
		return e, 0, ""
	}
	if in.id == "" || in.nonce == "" {
		return e, http.StatusBadRequest, "A signed event must carry its id and nonce"
	}
	var pub []byte
	for _, k := range keys {
		if k.ID == in.signingKeyID && k.State() == catalog.KeyActive {
			p, err := tlog.ParsePublicKey(k.PublicKey)
			if err == nil {
				pub = p
			}
		}
	}
	if pub == nil {
		return e, http.StatusBadRequest, "Unknown or revoked signing key"
	}
	nonce, err := tlog.ParseNonce(in.nonce)
	if err != nil {
		return e, http.StatusBadRequest, "nonce must be 32 bytes of lowercase hex"
	}
	// The commitment is re-derived from exactly the bytes that will be persisted.
	payload := in.payload()
	if err := tlog.VerifyEventSignature(pub, in.id, tlog.Commitment(nonce, payload), in.signature); err != nil {
		return e, http.StatusBadRequest, "Signature does not verify"
	}
	if e.Index.Status == "" {
		e.Index.Status = "success"
	}
	e.ID, e.Nonce, e.Payload = in.id, &nonce, payload
	e.SigningKeyID, e.Signature = in.signingKeyID, in.signature
	return e, 0, ""
}

// submit seals e and answers the request.
func (s *Server) submit(w http.ResponseWriter, r *http.Request, log catalog.LogID, e sequencer.Entry) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.cfg.SealTimeout)
	defer cancel()
	res, err := s.cfg.Sequencer.Submit(ctx, log, e)
	if err == nil {
		s.metrics.sealLat.Observe(time.Since(start).Seconds())
		if log.Stream == catalog.StreamEvents {
			s.metrics.ingestedEvents.Inc()
		} else {
			s.metrics.ingested.WithLabelValues(string(log.Stream)).Inc()
		}
		writeSealed(w, res.ID)
		return
	}
	o := s.sealFailure(r, log, err)
	if o.retryAfter > 0 {
		writeRetry(w, o.status, o.msg, o.retryAfter)
		return
	}
	writeError(w, o.status, o.msg)
}

// sealOutcome is how a failed seal is answered.
type sealOutcome struct {
	status     int
	msg        string
	retryAfter time.Duration // > 0 for the statuses a client should retry
}

// sealFailure maps a sequencer error to its answer, counting and logging it.
func (s *Server) sealFailure(r *http.Request, log catalog.LogID, err error) sealOutcome {
	var busy *sequencer.BusyError
	switch {
	case errors.As(err, &busy):
		s.metrics.errors.WithLabelValues("busy").Inc()
		return sealOutcome{http.StatusServiceUnavailable, "Too many events waiting to be sealed; retry later", max(busy.RetryAfter, time.Second)}
	case errors.Is(err, sequencer.ErrIDConflict):
		s.metrics.errors.WithLabelValues("bad_request").Inc()
		return sealOutcome{http.StatusConflict, "Event id already used with different content", 0}
	case errors.Is(err, sequencer.ErrNotPublished):
		s.metrics.errors.WithLabelValues("seal").Inc()
		return sealOutcome{http.StatusServiceUnavailable, "Event committed but not yet published; retrying a signed event returns its result", 2 * time.Second}
	case errors.Is(err, sequencer.ErrClosed):
		return sealOutcome{http.StatusServiceUnavailable, "Service is shutting down", time.Second}
	default:
		s.metrics.errors.WithLabelValues("seal").Inc()
		s.cfg.Logger.ErrorContext(r.Context(), "seal failed", "err", err, "request_id", requestID(r), "log", log.String())
		return sealOutcome{http.StatusInternalServerError, "Failed to seal event; nothing was recorded", 0}
	}
}

// clientIP is the request's client address: the connection's peer, or with
// TrustProxyHeaders the last X-Forwarded-For entry, the one the trusted proxy wrote
// (entries before it are whatever the client sent).
func (s *Server) clientIP(r *http.Request) string {
	if s.cfg.TrustProxyHeaders {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			last := xff[len(xff)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if ip := net.ParseIP(strings.TrimSpace(last)); ip != nil {
				return ip.String()
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return ""
	}
	return host
}
