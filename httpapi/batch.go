package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/sequencer"
)

// Item statuses of POST /api/v1/log/batch.
const (
	itemSealed      = "sealed"      // committed and published, as a 202 of POST /log
	itemRejected    = "rejected"    // the item's 4xx: nothing of it was recorded
	itemFailed      = "failed"      // its seal failed: nothing of it was recorded
	itemUnavailable = "unavailable" // back-pressure, shutdown, or committed but not yet published: retry
)

// batchItem is one result of POST /api/v1/log/batch, at the index of its event. A
// sealed item has id; any other has code (the status POST /log would have answered
// for that event alone), error, and details for a schema failure.
type batchItem struct {
	Index      int          `json:"index"`
	Status     string       `json:"status"`
	ID         string       `json:"id,omitempty"`
	Code       int          `json:"code,omitempty"`
	Error      string       `json:"error,omitempty"`
	Details    []FieldError `json:"details,omitempty"`
	RetryAfter int          `json:"retryAfter,omitempty"` // seconds, for unavailable items
}

// batchResult is the 200 body of POST /api/v1/log/batch.
type batchResult struct {
	Sealed  int         `json:"sealed"`
	Results []batchItem `json:"results"`
}

// ingestBatch is POST /api/v1/log/batch: {"events": [event, ...]}. Every event goes
// through POST /log's validation and signing rules; the valid ones are sealed in
// their order, and the answer holds one result per event, in order.
func (s *Server) ingestBatch(w http.ResponseWriter, r *http.Request) {
	key := apiKeyFrom(r)
	canon, ok := s.readBody(w, r, s.cfg.MaxBatchBodyBytes)
	if !ok {
		return
	}
	// In canonical form an object whose only member is "events" is exactly
	// {"events":value}; canonElements refuses a value with anything after the array.
	var events [][]byte
	ok = false
	if v, found := bytes.CutPrefix(canon, []byte(`{"events":`)); found && bytes.HasSuffix(v, []byte("}")) {
		events, ok = canonElements(v[:len(v)-1])
	}
	if !ok || events == nil {
		s.metrics.errors.WithLabelValues("bad_request").Inc()
		writeDetails(w, http.StatusBadRequest, "Invalid batch", []FieldError{{Field: "events",
			Message: "the body must be {\"events\": [event, ...]} and nothing else"}})
		return
	}
	if len(events) == 0 || len(events) > s.cfg.MaxBatchEvents {
		s.metrics.errors.WithLabelValues("bad_request").Inc()
		writeDetails(w, http.StatusBadRequest, "Invalid batch", []FieldError{{Field: "events",
			Message: fmt.Sprintf("must hold 1 to %d events", s.cfg.MaxBatchEvents)}})
		return
	}
	// The batch counts as one ingest request per event (rateLimited took the first
	// token); it is refused whole when the others do not all fit.
	if n := len(events) - 1; n > 0 && !s.allowIngest(w, r, n) {
		return
	}
	keys, err := s.cfg.Control.IngestSigningKeys(r.Context(), key.ProjectID)
	if err != nil {
		s.internal(w, r, "signing keys", err)
		return
	}
	// The payloads are about the body's size, plus what the enrichment adds to each.
	en := &enrichment{r: r, block: min(len(canon)+256*len(events), 4<<20)}
	items := make([]batchItem, len(events))
	// Sized for every event at once: growing a slice of a thousand entries by
	// doubling copied and dropped about twice their bytes per batch.
	entries := make([]sequencer.Entry, 0, len(events))
	at := make([]int, 0, len(events)) // index of each entry's event
	for i, raw := range events {
		items[i].Index = i
		if int64(len(raw)) > s.cfg.MaxBodyBytes {
			items[i].reject(http.StatusRequestEntityTooLarge, "Event exceeds the limit", nil)
			continue
		}
		in, errs := parseEvent(raw)
		if errs != nil {
			items[i].reject(http.StatusBadRequest, "Invalid event", errs)
			continue
		}
		e, status, msg := s.prepareWith(en, keys, in)
		if status != 0 {
			items[i].reject(status, msg, nil)
			continue
		}
		entries, at = append(entries, e), append(at, i)
	}
	if n := len(events) - len(entries); n > 0 {
		s.metrics.errors.WithLabelValues("bad_request").Add(float64(n))
	}
	log := catalog.LogID{ProjectID: key.ProjectID, Stream: catalog.StreamEvents}
	res := batchResult{Results: items}
	if len(entries) > 0 {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), s.cfg.SealTimeout)
		defer cancel()
		results, errs := s.cfg.Sequencer.SubmitMany(ctx, log, entries)
		for j, i := range at {
			if errs[j] != nil {
				items[i].failed(s.sealFailure(r, log, errs[j]))
				continue
			}
			items[i].Status, items[i].ID = itemSealed, results[j].ID
			res.Sealed++
		}
		s.metrics.sealLat.Observe(time.Since(start).Seconds())
		s.metrics.ingested.WithLabelValues(string(log.Stream)).Add(float64(res.Sealed))
	}
	writeBatchResult(w, res)
}

func (it *batchItem) reject(code int, msg string, details []FieldError) {
	it.Status, it.Code, it.Error, it.Details = itemRejected, code, msg, details
}

func (it *batchItem) failed(o sealOutcome) {
	it.Code, it.Error = o.status, o.msg
	switch {
	case o.retryAfter > 0:
		it.Status, it.RetryAfter = itemUnavailable, retrySeconds(o.retryAfter)
	case o.status < http.StatusInternalServerError:
		it.Status = itemRejected
	default:
		it.Status = itemFailed
	}
}
