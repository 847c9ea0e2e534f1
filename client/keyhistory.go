package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/sealtrail/sealtrail/tlog"
)

// KeyHistory fetches the service's signed key history (GET /api/v1/key-history) and
// verifies it as one chain (tlog.ParseKeyHistory). A service that serves none (404)
// has an empty history.
func (c *Client) KeyHistory(ctx context.Context) (*tlog.KeyHistory, error) {
	var raw json.RawMessage
	err := c.doJSON(ctx, http.MethodGet, "/key-history", nil, nil, &raw)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return &tlog.KeyHistory{}, nil
	}
	if err != nil {
		return nil, err
	}
	h, err := tlog.ParseKeyHistory(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: GET /key-history: %w", ErrUnexpectedResponse, err)
	}
	return h, nil
}

// keyMove decides whether the service may present key to after the client trusted
// key from: it may when the service's key history announces the move (from, then to,
// later in one signed chain). It returns the history when it does, a description of
// the refusal when it does not (service_key_changed), and an error when the question
// could not be put. A history that does not verify is itself a refusal: the service
// signed it, so a broken one is not a transport problem.
func (c *Client) keyMove(ctx context.Context, from, to string) (*tlog.KeyHistory, string, error) {
	h, err := c.KeyHistory(ctx)
	if errors.Is(err, ErrUnexpectedResponse) {
		return nil, fmt.Sprintf("service key changed from %s to %s and the key history does not verify: %v", from, to, err), nil
	}
	if err != nil {
		return nil, "", err
	}
	if err := h.Announced(from, to); err != nil {
		return nil, fmt.Sprintf("service key changed from %s to %s without announcement: %v", from, to, err), nil
	}
	return h, "", nil
}
