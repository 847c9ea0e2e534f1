package client

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// DefaultBaseURL is the base URL used when Config.BaseURL is empty: a sealtraild
// running locally with its default listen address. The spec leaves it as the
// placeholder {base_url}; production clients set BaseURL.
const DefaultBaseURL = "http://127.0.0.1:8080"

// DefaultAutoVerifyInterval is the minimum gap between two opportunistic consistency
// checks of one stream (the spec's autoVerifyIntervalMs default, 60000).
const DefaultAutoVerifyInterval = 60 * time.Second

// maxResponseBytes bounds a JSON response body (500 stored events of up to 1 MiB of
// payload each fit well under it).
const maxResponseBytes = 1 << 30

// backgroundCheckTimeout bounds one opportunistic consistency check.
const backgroundCheckTimeout = 30 * time.Second

// Config configures a Client. It mirrors the spec's client options.
type Config struct {
	// APIKey is the project API key (required). Its scopes decide which methods work:
	// log:write for Log, log:read for Query, log:export for Export, log:verify for
	// Verify, GetRoot, the proofs and every consistency check.
	APIKey string
	// BaseURL is the service address without /api/v1 (default DefaultBaseURL). A
	// trailing slash is removed. Pins are namespaced by it.
	BaseURL string
	// SigningKeyID and SigningPrivateKey configure customer signing; give both or
	// neither. The private key is lowercase hex, the 32-byte seed or the 64-byte
	// seed||public form (tlog.ParsePrivateKey). It never leaves the process.
	SigningKeyID      string
	SigningPrivateKey string
	// HeadStore keeps the pinned heads (default: a new MemoryHeadStore, which forgets
	// them when the process ends; use a FileHeadStore to keep them across restarts).
	HeadStore HeadStore
	// AutoVerify turns the opportunistic checks after Log and Query on or off
	// (default on; nil means on).
	AutoVerify *bool
	// AutoVerifyInterval is the minimum gap between two opportunistic checks of one
	// stream, counted from the start of the previous attempt (default
	// DefaultAutoVerifyInterval). A failed attempt is retried after the same gap.
	AutoVerifyInterval time.Duration
	// ServicePublicKey pins the service Ed25519 key (lowercase hex). Without it the key
	// is trusted on first use and stored with each pin.
	ServicePublicKey string
	// ProjectID, when set, is the project the API key belongs to: every head must be
	// that project's, from the first check on, and a head store holding pins of another
	// project on this base URL gives ErrProjectMismatch. Without it the project, like the
	// key, is trusted on first use: that of the head first pinned on the base URL.
	ProjectID string
	// WitnessKeys are the signed-note verifier keys of the witnesses the caller
	// trusts: VerifyAnchor then requires a cosignature of one of them. Without them an
	// anchor is checked up to the service-signed tree_heads checkpoint. Rekor and
	// RFC 3161 attestations are not checked by the client (docs/client.md).
	WitnessKeys []string
	// OnTamper is called once, with the error that poisoned the client, in addition to
	// that error being returned. It runs on the goroutine that detected the tamper
	// (a background goroutine for opportunistic checks) and must not block for long.
	OnTamper func(*TamperError)
	// OnCheckError, when set, is told about opportunistic checks that failed for a
	// reason other than tampering (network, HTTP status, head store); such failures are
	// otherwise swallowed and retried at a later interaction.
	OnCheckError func(stream Stream, err error)
	// HTTPClient sends the requests (default: a client without an overall timeout;
	// bound each call with its context).
	HTTPClient *http.Client
}

// Client talks to one Sealtrail service with one API key. It is safe for concurrent
// use. Close stops its background checks.
type Client struct {
	baseURL     string
	apiKey      string
	http        *http.Client
	signKeyID   string
	signKey     ed25519.PrivateKey
	serviceKey  ed25519.PublicKey // configured key, or nil for trust on first use
	projectID   string            // configured project, or "" for trust on first use
	store       HeadStore
	autoVerify  bool
	interval    time.Duration
	onTamper    func(*TamperError)
	onCheckErr  func(Stream, error)
	witnessKeys []string

	// poison holds the first tamper error; once set it never changes.
	poison atomic.Pointer[TamperError]

	mu      sync.Mutex              // guards streams and closed
	streams map[Stream]*streamState // per-stream check state
	closed  bool

	bg       sync.WaitGroup // in-flight background checks
	bgCtx    context.Context
	bgCancel context.CancelFunc
}

// streamState serializes the consistency checks of one stream and throttles the
// opportunistic ones.
type streamState struct {
	check       sync.Mutex // held for a whole check: load pin, fetch, verify, save
	lastAttempt time.Time  // guarded by Client.mu
	inFlight    bool       // guarded by Client.mu
}

// New validates cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("sealtrail client: APIKey is required")
	}
	if (cfg.SigningKeyID == "") != (cfg.SigningPrivateKey == "") {
		return nil, errors.New("sealtrail client: SigningKeyID and SigningPrivateKey must be given together")
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("sealtrail client: BaseURL %q is not an http(s) URL", cfg.BaseURL)
	}
	c := &Client{
		baseURL:    base,
		apiKey:     cfg.APIKey,
		http:       cfg.HTTPClient,
		signKeyID:  cfg.SigningKeyID,
		store:      cfg.HeadStore,
		autoVerify: cfg.AutoVerify == nil || *cfg.AutoVerify,
		interval:   cfg.AutoVerifyInterval,
		onTamper:   cfg.OnTamper,
		onCheckErr: cfg.OnCheckError,
		projectID:  cfg.ProjectID,
		streams:    map[Stream]*streamState{},
	}
	for _, k := range cfg.WitnessKeys {
		if _, err := tlog.NewCosignatureVerifier(k); err != nil {
			return nil, fmt.Errorf("sealtrail client: WitnessKeys: %w", err)
		}
	}
	c.witnessKeys = cfg.WitnessKeys
	if cfg.SigningPrivateKey != "" {
		k, err := tlog.ParsePrivateKey(cfg.SigningPrivateKey)
		if err != nil {
			return nil, fmt.Errorf("sealtrail client: SigningPrivateKey: %w", err)
		}
		c.signKey = k
	}
	if cfg.ServicePublicKey != "" {
		k, err := tlog.ParsePublicKey(cfg.ServicePublicKey)
		if err != nil {
			return nil, fmt.Errorf("sealtrail client: ServicePublicKey: %w", err)
		}
		c.serviceKey = k
	}
	if c.http == nil {
		// No overall timeout: an export streams for as long as the stream is long and
		// a verify rebuilds the whole tree before answering. Callers bound calls with
		// their context; background checks have their own deadline.
		c.http = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if c.store == nil {
		c.store = NewMemoryHeadStore()
	}
	if c.interval <= 0 {
		c.interval = DefaultAutoVerifyInterval
	}
	c.bgCtx, c.bgCancel = context.WithCancel(context.Background())
	return c, nil
}

// BaseURL returns the normalized base URL.
func (c *Client) BaseURL() string { return c.baseURL }

// Err returns the tamper error that poisoned the client, or nil.
func (c *Client) Err() error {
	if p := c.poison.Load(); p != nil {
		return p
	}
	return nil
}

// Wait blocks until the opportunistic checks in flight have finished.
func (c *Client) Wait() { c.bg.Wait() }

// Close cancels the opportunistic checks in flight, waits for them and starts no new
// ones. The client stays usable for explicit calls.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.bgCancel()
	c.bg.Wait()
	return nil
}

// APIError is returned for every non-2xx response, and for a request that got no
// response at all (Status 0, the transport error in Err).
type APIError struct {
	// Status is the HTTP status, or 0 when no response arrived.
	Status int
	// Message is the response's error member, or the status text.
	Message string
	// Details is the parsed JSON error body, or the raw body text when it is not JSON.
	Details any
	// FieldErrors are the schema errors of a rejected ingest (the body's details).
	FieldErrors []FieldError
	// RetryAfter is the Retry-After header of a 429 or 503, zero when absent.
	RetryAfter time.Duration
	// Method and Path name the request.
	Method, Path string
	// Err is the transport error when Status is 0.
	Err error
}

// FieldError is one field error of a schema failure.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *APIError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("sealtrail: %s %s: %v", e.Method, e.Path, e.Err)
	}
	return fmt.Sprintf("sealtrail: %s %s: %d: %s", e.Method, e.Path, e.Status, e.Message)
}

// Unwrap returns the transport error, if any.
func (e *APIError) Unwrap() error { return e.Err }

// ErrUnexpectedResponse wraps a 2xx response that does not have the documented shape.
var ErrUnexpectedResponse = errors.New("sealtrail: unexpected response")

// request sends one API request. body, when non-nil, is sent as JSON. On a 2xx it
// returns the response with an open body; otherwise an *APIError.
func (c *Client) request(ctx context.Context, method, path string, q url.Values, body []byte) (*http.Response, error) {
	u := c.baseURL + "/api/v1" + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, fmt.Errorf("sealtrail: %s %s: %w", method, path, err)
	}
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, &APIError{Method: method, Path: path, Message: err.Error(), Err: err}
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	return nil, apiError(method, path, resp)
}

func apiError(method, path string, resp *http.Response) *APIError {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	e := &APIError{Status: resp.StatusCode, Method: method, Path: path, Message: http.StatusText(resp.StatusCode)}
	var body struct {
		Error   string       `json:"error"`
		Details []FieldError `json:"details"`
	}
	var parsed any
	if json.Unmarshal(raw, &parsed) == nil {
		e.Details = parsed
		if json.Unmarshal(raw, &body) == nil && body.Error != "" {
			e.Message = body.Error
			e.FieldErrors = body.Details
		}
	} else {
		e.Details = string(raw)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "" {
		var secs int
		if _, err := fmt.Sscanf(ra, "%d", &secs); err == nil && secs > 0 {
			e.RetryAfter = time.Duration(secs) * time.Second
		}
	}
	return e
}

// getJSON sends a request and decodes its 2xx JSON body into out.
func (c *Client) doJSON(ctx context.Context, method, path string, q url.Values, body []byte, out any) error {
	resp, err := c.request(ctx, method, path, q, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return &APIError{Method: method, Path: path, Message: err.Error(), Err: err}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("%w: %s %s: %w", ErrUnexpectedResponse, method, path, err)
	}
	return nil
}
