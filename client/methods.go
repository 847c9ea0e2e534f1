package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// Log records one event (POST /log). With signing configured it mints the id and
// nonce, sets the status explicitly (success when empty), commits to the payload and
// signs the commitment before sending (see signEvent). A signed event is idempotent
// (the service answers a resend of the same signed body with the first result), so Log
// resends it, up to signedLogAttempts in all, after a 503 or a transport failure;
// unsigned events are never resent. Afterwards an opportunistic consistency check of
// the events stream may start in the background.
func (c *Client) Log(ctx context.Context, in EventInput) (*LogResult, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	body, err := c.eventBody(in)
	if err != nil {
		return nil, err
	}
	var res LogResult
	err = c.doJSON(ctx, http.MethodPost, "/log", nil, body, &res)
	for attempt := 1; err != nil && c.signKey != nil && attempt < signedLogAttempts; attempt++ {
		wait, ok := resendDelay(err)
		if !ok || sleep(ctx, wait) != nil {
			break
		}
		err = c.doJSON(ctx, http.MethodPost, "/log", nil, body, &res)
	}
	c.maybeCheck(StreamEvents)
	if err != nil {
		return nil, err
	}
	return &res, nil
}

// signedLogAttempts bounds the sends of one signed event.
const signedLogAttempts = 3

// resendDelay says whether a failed send of a signed event is worth repeating, and
// after how long: a 503 (overloaded, or committed but not yet published) after its
// Retry-After (at most 5 s), or a transport failure after 250 ms.
func resendDelay(err error) (time.Duration, bool) {
	var ae *APIError
	if !errors.As(err, &ae) {
		return 0, false
	}
	switch {
	case ae.Status == http.StatusServiceUnavailable:
		return min(max(ae.RetryAfter, 250*time.Millisecond), 5*time.Second), true
	case ae.Status == 0 && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded):
		return 250 * time.Millisecond, true
	}
	return 0, false
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// eventBody renders the ingest body of in, signed when a signing key is configured,
// in its RFC 8785 form: the service keeps that form of every body, and takes a body
// that already is canonical as it is instead of canonicalizing it again.
func (c *Client) eventBody(in EventInput) ([]byte, error) {
	if c.signKey == nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, fmt.Errorf("sealtrail client: encode event: %w", err)
		}
		return canonicalBody(b), nil
	}
	signed, err := signEvent(c.signKey, c.signKeyID, in, time.Now())
	if err != nil {
		return nil, err
	}
	return canonicalBody(signed.Body), nil
}

// canonicalBody returns the RFC 8785 form of the JSON text b, or b itself when it has
// none (a number beyond 2^53, say): the service then answers with the 400 it explains.
func canonicalBody(b []byte) []byte {
	if canon, err := tlog.Canonicalize(b); err == nil {
		return canon
	}
	return b
}

// Query reads a page of events (GET /events). Afterwards an opportunistic consistency
// check of the events stream may start in the background.
func (c *Client) Query(ctx context.Context, in QueryInput) (*QueryResult, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	q := url.Values{}
	set(q, "action", in.Action)
	set(q, "status", in.Status)
	set(q, "actorId", in.ActorID)
	set(q, "targetId", in.TargetID)
	setTime(q, "from", in.From)
	setTime(q, "to", in.To)
	if in.Limit > 0 {
		q.Set("limit", strconv.Itoa(in.Limit))
	}
	set(q, "cursor", in.Cursor)
	set(q, "entityType", in.EntityType)
	set(q, "entityId", in.EntityID)
	set(q, "direction", in.Direction)
	var res QueryResult
	err := c.doJSON(ctx, http.MethodGet, "/events", q, nil, &res)
	c.maybeCheck(StreamEvents)
	if err != nil {
		return nil, err
	}
	if res.Events == nil {
		return nil, fmt.Errorf("%w: GET /events: no events member", ErrUnexpectedResponse)
	}
	return &res, nil
}

// Export starts an export (GET /export) and returns the raw response, whose body
// streams the rows; the caller must close it. A download cut short by the service
// ends with a read error, never with a clean EOF.
func (c *Client) Export(ctx context.Context, in ExportInput) (*http.Response, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	q := url.Values{}
	set(q, "format", in.Format)
	set(q, "action", in.Action)
	set(q, "status", in.Status)
	set(q, "actorId", in.ActorID)
	set(q, "targetId", in.TargetID)
	setTime(q, "from", in.From)
	setTime(q, "to", in.To)
	if in.Max > 0 {
		q.Set("max", strconv.FormatUint(in.Max, 10))
	}
	return c.request(ctx, http.MethodGet, "/export", q, nil)
}

// GetRoot returns the stream's current signed tree head as served (GET /root). It
// does not verify it; CheckConsistency does.
func (c *Client) GetRoot(ctx context.Context, stream Stream) (*Root, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	return c.getRoot(ctx, stream)
}

func (c *Client) getRoot(ctx context.Context, stream Stream) (*Root, error) {
	s, err := stream.normalize()
	if err != nil {
		return nil, err
	}
	var res Root
	if err := c.doJSON(ctx, http.MethodGet, "/root", url.Values{"stream": {string(s)}}, nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// GetInclusionProof fetches an inclusion proof as served (GET /proof/inclusion).
// VerifyInclusion fetches and checks one against the pinned head.
func (c *Client) GetInclusionProof(ctx context.Context, in InclusionProofInput) (*InclusionProof, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	s, err := in.Stream.normalize()
	if err != nil {
		return nil, err
	}
	q := url.Values{"stream": {string(s)}}
	if in.EventID != "" {
		q.Set("eventId", in.EventID)
	} else {
		q.Set("leafIndex", strconv.FormatUint(in.LeafIndex, 10))
	}
	if in.TreeSize > 0 {
		q.Set("treeSize", strconv.FormatUint(in.TreeSize, 10))
	}
	var res InclusionProof
	if err := c.doJSON(ctx, http.MethodGet, "/proof/inclusion", q, nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// GetConsistencyProof fetches a consistency proof as served (GET /proof/consistency).
func (c *Client) GetConsistencyProof(ctx context.Context, in ConsistencyProofInput) (*ConsistencyProof, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	return c.getConsistencyProof(ctx, in)
}

func (c *Client) getConsistencyProof(ctx context.Context, in ConsistencyProofInput) (*ConsistencyProof, error) {
	s, err := in.Stream.normalize()
	if err != nil {
		return nil, err
	}
	q := url.Values{"stream": {string(s)}, "oldSize": {strconv.FormatUint(in.OldSize, 10)}}
	if in.NewSize > 0 {
		q.Set("newSize", strconv.FormatUint(in.NewSize, 10))
	}
	var res ConsistencyProof
	if err := c.doJSON(ctx, http.MethodGet, "/proof/consistency", q, nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// GetAnchors lists the stream's attested heads, newest first (GET /anchors); limit 0
// means the service default (20, capped at 100).
func (c *Client) GetAnchors(ctx context.Context, stream Stream, limit int) (*Anchors, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	s, err := stream.normalize()
	if err != nil {
		return nil, err
	}
	q := url.Values{"stream": {string(s)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var res Anchors
	if err := c.doJSON(ctx, http.MethodGet, "/anchors", q, nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func set(q url.Values, name, v string) {
	if v != "" {
		q.Set(name, v)
	}
}

func setTime(q url.Values, name string, t time.Time) {
	if !t.IsZero() {
		// Full precision: the service takes any RFC 3339 time, and truncating an
		// exclusive bound to the millisecond would drop events.
		q.Set(name, t.UTC().Format(time.RFC3339Nano))
	}
}
