// Package peerhttp is the one HTTP exchange the external anchor publishers
// (anchor/rekor, anchor/tsa) have with their peer: POST a request body, read a
// bounded response, and describe an error body in one printable line.
package peerhttp

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Post sends body to url with the given Content-Type and Accept headers through
// client and returns the status code and the response body, at most max bytes (a
// longer body is an error). Every error is the peer's or the network's.
func Post(ctx context.Context, client *http.Client, url, contentType, accept string, body []byte, max int64) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, fmt.Errorf("request %s: %w", url, err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", accept)
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return 0, nil, fmt.Errorf("read response from %s: %w", url, err)
	}
	if int64(len(b)) > max {
		return 0, nil, fmt.Errorf("response from %s is over %d bytes", url, max)
	}
	return resp.StatusCode, b, nil
}

// Snippet is the start of a response body as one printable line, for an error message.
func Snippet(b []byte) string {
	const max = 200
	s := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(string(b), "?"))
	s = strings.TrimSpace(s)
	if len(s) > max {
		s = s[:max] + "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return s
}
