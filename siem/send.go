package siem

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// A sender delivers batches of one destination, in order. Send returns nil only when
// the receiver took every event of the batch (for HTTP kinds: a 2xx answer; for
// syslog: the TLS write of every frame returned, since syslog has no acknowledgement).
// A sender is used by one runner goroutine at a time.
type sender interface {
	Send(ctx context.Context, b *batch) error
	Close() error
}

// batch is what a sender delivers: events in sequence order, each rendered.
type batch struct {
	destID    string
	projectID string
	stream    string
	format    string
	events    []Event
	rendered  [][]byte
}

func (b *batch) first() uint64 { return b.events[0].Sequence }
func (b *batch) last() uint64  { return b.events[len(b.events)-1].Sequence }

func newSender(kind string, s Settings) (sender, error) {
	tc, err := s.tlsConfig()
	if err != nil {
		return nil, err
	}
	switch kind {
	case KindSyslog:
		host := s.Hostname
		if host == "" {
			host, _ = os.Hostname()
		}
		return &syslogSender{addr: s.Address, tls: tc, host: sdSafe(host, 255)}, nil
	case KindHEC:
		u := strings.TrimRight(s.URL, "/")
		if !strings.Contains(u, "/services/collector") {
			u += "/services/collector/event"
		}
		return &hecSender{url: u, token: s.Token, index: s.Index, sourceType: s.SourceType, client: httpClient(tc)}, nil
	case KindWebhook:
		key, err := secretKey(s.Secret)
		if err != nil {
			return nil, err
		}
		return &webhookSender{url: s.URL, key: key, client: httpClient(tc), now: time.Now}, nil
	}
	return nil, fmt.Errorf("siem: unknown kind %q", kind)
}

func httpClient(tc *tls.Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	tr.Proxy = nil
	return &http.Client{Transport: tr, Timeout: sendTimeout,
		// A receiver's redirect is not followed: the signed body goes only where the
		// operator said.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// sendTimeout bounds one delivery attempt; it is below the lease TTL.
const sendTimeout = 10 * time.Second

// syslogSender writes RFC 5424 messages with RFC 5425 octet-counting framing over one
// TLS connection, reopened after any error.
type syslogSender struct {
	addr string
	tls  *tls.Config
	host string
	conn *tls.Conn
}

// syslogPRI is facility 13 (log audit) and severity 6 (informational).
const syslogPRI = 13*8 + 6

// sdID is the structured-data id of Sealtrail's parameters; 32473 is the private
// enterprise number RFC 5612 reserves for documentation (docs/siem.md).
const sdID = "sealtrail@32473"

func (s *syslogSender) Send(ctx context.Context, b *batch) error {
	var buf bytes.Buffer
	for i := range b.events {
		msg := syslogMessage(s.host, b, i)
		buf.WriteString(strconv.Itoa(len(msg)))
		buf.WriteByte(' ')
		buf.Write(msg)
	}
	if s.conn == nil {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: sendTimeout}, Config: s.tls}
		c, err := d.DialContext(ctx, "tcp", s.addr)
		if err != nil {
			return fmt.Errorf("syslog: dial %s: %w", s.addr, err)
		}
		s.conn = c.(*tls.Conn)
	}
	deadline := time.Now().Add(sendTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = s.conn.SetWriteDeadline(deadline)
	if _, err := s.conn.Write(buf.Bytes()); err != nil {
		_ = s.Close()
		return fmt.Errorf("syslog: write to %s: %w", s.addr, err)
	}
	return nil
}

func (s *syslogSender) Close() error {
	if s.conn == nil {
		return nil
	}
	err := s.conn.Close()
	s.conn = nil
	return err
}

// syslogMessage is event i of b as an RFC 5424 message.
func syslogMessage(host string, b *batch, i int) []byte {
	e := &b.events[i]
	ts := str(e.Members, "timestamp")
	if ts == "" {
		ts = "-"
	}
	var m bytes.Buffer
	fmt.Fprintf(&m, "<%d>1 %s %s sealtrail - %s [%s seq=\"%d\" leafHash=\"%x\" treeSize=\"%d\" projectId=\"%s\" id=\"%s\"] ",
		syslogPRI, ts, host, sdSafe(b.stream, 32), sdID, e.Sequence, e.LeafHash[:], e.TreeSize,
		sdValue(b.projectID), sdValue(e.ID))
	// A message is one line: the JSON formats have no raw line breaks, and CEF escapes
	// them.
	m.Write(b.rendered[i])
	return m.Bytes()
}

// sdSafe keeps the printable US-ASCII of s (a header field), at most n bytes, "-" if
// empty.
func sdSafe(s string, n int) string {
	out := strings.Map(func(r rune) rune {
		if r > ' ' && r < 0x7f {
			return r
		}
		return -1
	}, s)
	if len(out) > n {
		out = out[:n]
	}
	if out == "" {
		return "-"
	}
	return out
}

// sdValue escapes a structured-data parameter value (RFC 5424 section 6.3.3).
func sdValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, `]`, `\]`).Replace(s)
}

// hecSender posts a batch to Splunk's HTTP Event Collector, one JSON event object per
// event, concatenated, as HEC takes them.
type hecSender struct {
	url, token, index, sourceType string
	client                        *http.Client
}

func (h *hecSender) Send(ctx context.Context, b *batch) error {
	st := h.sourceType
	if st == "" {
		st = "sealtrail:" + b.format
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for i := range b.events {
		e := &b.events[i]
		ev := map[string]any{
			"time": unixTime(epochMS(e)), "source": "sealtrail:" + b.projectID + "/" + b.stream, "sourcetype": st,
			"event": eventValue(b.format, b.rendered[i]),
			"fields": map[string]any{"sequence": e.Sequence, "leafHash": fmt.Sprintf("%x", e.LeafHash[:]),
				"treeSize": e.TreeSize, "projectId": b.projectID, "stream": b.stream, "eventId": e.ID},
		}
		if h.index != "" {
			ev["index"] = h.index
		}
		if err := enc.Encode(ev); err != nil {
			return fmt.Errorf("hec: encode: %w", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, &body)
	if err != nil {
		return fmt.Errorf("hec: %w", err)
	}
	req.Header.Set("Authorization", "Splunk "+h.token)
	req.Header.Set("Content-Type", "application/json")
	return do(h.client, req, "hec")
}

func (h *hecSender) Close() error { h.client.CloseIdleConnections(); return nil }

// eventValue is a rendered event as a JSON value: the object itself for the JSON
// formats, a string for CEF.
func eventValue(format string, rendered []byte) any {
	if format == FormatCEF {
		return string(rendered)
	}
	return json.RawMessage(rendered)
}

// do sends req and accepts only a 2xx answer.
func do(c *http.Client, req *http.Request, what string) error {
	res, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s answered %s: %s", what, req.URL.Redacted(), res.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// webhookSender posts each batch as one message signed as Standard Webhooks
// describes: webhook-id, webhook-timestamp and webhook-signature "v1,<base64 of
// HMAC-SHA256(key, id.timestamp.body)>".
type webhookSender struct {
	url    string
	key    []byte
	client *http.Client
	now    func() time.Time
}

// WebhookPayload is the body of a webhook message.
type WebhookPayload struct {
	Type      string `json:"type"` // "sealtrail.events"
	Timestamp string `json:"timestamp"`
	Data      struct {
		ProjectID string `json:"projectId"`
		Stream    string `json:"stream"`
		Format    string `json:"format"`
		// First and Last are the sequences of the first and last events.
		First  uint64            `json:"first"`
		Last   uint64            `json:"last"`
		Events []json.RawMessage `json:"events"`
	} `json:"data"`
}

func (w *webhookSender) Send(ctx context.Context, b *batch) error {
	now := w.now()
	var p WebhookPayload
	p.Type, p.Timestamp = "sealtrail.events", tlog.FormatTime(now)
	p.Data.ProjectID, p.Data.Stream, p.Data.Format, p.Data.First, p.Data.Last = b.projectID, b.stream, b.format, b.first(), b.last()
	for i := range b.rendered {
		v, err := json.Marshal(eventValue(b.format, b.rendered[i]))
		if err != nil {
			return fmt.Errorf("webhook: encode: %w", err)
		}
		p.Data.Events = append(p.Data.Events, v)
	}
	body, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("webhook: encode: %w", err)
	}
	// The id names the range, so a retry of the same range has the same id and a
	// receiver can drop it.
	id := fmt.Sprintf("msg_%s_%d_%d", b.destID, b.first(), b.last())
	ts := strconv.FormatInt(now.Unix(), 10)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", ts)
	req.Header.Set("webhook-signature", "v1,"+Sign(w.key, id, ts, body))
	return do(w.client, req, "webhook")
}

func (w *webhookSender) Close() error { w.client.CloseIdleConnections(); return nil }

// Sign is the Standard Webhooks v1 signature: base64 of HMAC-SHA256(key,
// id "." timestamp "." body).
func Sign(key []byte, id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + timestamp + "."))
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// VerifyWebhook checks a received message as a Standard Webhooks receiver does: the
// timestamp within tolerance of now and one v1 signature of the header list matching.
func VerifyWebhook(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := secretKey(secret)
	if err != nil {
		return err
	}
	id, ts := h.Get("webhook-id"), h.Get("webhook-timestamp")
	sec, err := strconv.ParseInt(ts, 10, 64)
	if id == "" || err != nil {
		return errors.New("webhook: missing webhook-id or webhook-timestamp")
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return errors.New("webhook: timestamp outside the tolerance")
	}
	want := Sign(key, id, ts, body)
	for _, sig := range strings.Fields(h.Get("webhook-signature")) {
		v, s, ok := strings.Cut(sig, ",")
		if ok && v == "v1" && hmac.Equal([]byte(s), []byte(want)) {
			return nil
		}
	}
	return errors.New("webhook: no matching v1 signature")
}
