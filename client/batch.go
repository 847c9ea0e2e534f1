package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Item statuses of a LogBatch result.
const (
	BatchSealed      = "sealed"
	BatchRejected    = "rejected"    // the event's 4xx; nothing of it was recorded
	BatchFailed      = "failed"      // its seal failed; nothing of it was recorded
	BatchUnavailable = "unavailable" // back-pressure, shutdown or not yet published; retry
)

// BatchItem is the outcome of one event of LogBatch, at the event's index.
type BatchItem struct {
	Index  int    `json:"index"`
	Status string `json:"status"`
	// ID is the sealed event's id.
	ID string `json:"id,omitempty"`
	// Code is the status POST /log would have answered for this event alone; zero
	// when sealed.
	Code        int          `json:"code,omitempty"`
	Error       string       `json:"error,omitempty"`
	FieldErrors []FieldError `json:"details,omitempty"`
	// RetryAfterSeconds accompanies unavailable items.
	RetryAfterSeconds int `json:"retryAfter,omitempty"`
}

// LogBatchResult holds one BatchItem per event, in the order they were given.
type LogBatchResult struct {
	Sealed  int         `json:"sealed"`
	Results []BatchItem `json:"results"`
}

// LogBatch records events in one request (POST /log/batch, at most the service's
// maxBatchEvents, 1,000 by default), sealed in their order. Each event succeeds or
// fails on its own; the error is for the request as a whole (an *APIError, or
// ErrUnexpectedResponse when the answer does not hold one result per event). Events
// are built and signed exactly as by Log, and as with Log a signed batch is resent
// after a 503 or a transport failure, and its unavailable events alone after their
// Retry-After, up to signedLogAttempts sends in all; unsigned events are never resent.
// Afterwards an opportunistic consistency check of the events stream may start in the
// background.
func (c *Client) LogBatch(ctx context.Context, events []EventInput) (*LogBatchResult, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	bodies := make([]json.RawMessage, len(events))
	for i, in := range events {
		b, err := c.eventBody(in)
		if err != nil {
			return nil, fmt.Errorf("sealtrail client: event %d: %w", i, err)
		}
		bodies[i] = b
	}
	defer c.maybeCheck(StreamEvents)
	res := &LogBatchResult{Results: make([]BatchItem, len(events))}
	pending := make([]int, len(events)) // indexes still to send
	for i := range pending {
		pending[i] = i
	}
	for attempt := 1; ; attempt++ {
		part, err := c.sendBatch(ctx, bodies, pending)
		signed := c.signKey != nil && attempt < signedLogAttempts
		if err != nil {
			wait, ok := resendDelay(err)
			if !signed || !ok || sleep(ctx, wait) != nil {
				return nil, err
			}
			continue
		}
		var again []int
		var wait time.Duration
		for j, it := range part.Results {
			i := pending[j]
			it.Index = i
			res.Results[i] = it
			if it.Status == BatchUnavailable {
				again = append(again, i)
				wait = max(wait, time.Duration(it.RetryAfterSeconds)*time.Second)
			}
		}
		if len(again) == 0 || !signed || sleep(ctx, min(max(wait, 250*time.Millisecond), 5*time.Second)) != nil {
			break
		}
		pending = again
	}
	for _, it := range res.Results {
		if it.Status == BatchSealed {
			res.Sealed++
		}
	}
	return res, nil
}

// sendBatch sends the events at indexes idx and checks that the answer holds one
// result per event, in order.
func (c *Client) sendBatch(ctx context.Context, bodies []json.RawMessage, idx []int) (*LogBatchResult, error) {
	// The bodies are JSON texts already (eventBody), in RFC 8785 form: joined as they
	// are, the batch is canonical too (json.Marshal would re-scan each and escape <, >
	// and & in its strings, which the canonical form does not).
	size := len(`{"events":[]}`) + len(idx)
	for _, i := range idx {
		size += len(bodies[i])
	}
	body := make([]byte, 0, size)
	body = append(body, `{"events":[`...)
	for j, i := range idx {
		if j > 0 {
			body = append(body, ',')
		}
		body = append(body, bodies[i]...)
	}
	body = append(body, `]}`...)
	var res LogBatchResult
	if err := c.doJSON(ctx, http.MethodPost, "/log/batch", nil, body, &res); err != nil {
		return nil, err
	}
	if len(res.Results) != len(idx) {
		return nil, fmt.Errorf("%w: POST /log/batch: %d results for %d events", ErrUnexpectedResponse, len(res.Results), len(idx))
	}
	for j, it := range res.Results {
		if it.Index != j || it.Status == "" || (it.Status == BatchSealed) != (it.ID != "") {
			return nil, fmt.Errorf("%w: POST /log/batch: result %d is %+v", ErrUnexpectedResponse, j, it)
		}
	}
	return &res, nil
}
