package siem

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/control"
)

// webhookReceiver is a Standard Webhooks receiver: it verifies each message's
// signature and timestamp, refuses a bad one with 401, answers the statuses fault
// gives (0: 204), and records the sequences of the messages it accepted.
func webhookReceiver(t *testing.T, secret *atomic.Value, fault func(n int64) int) (*httptest.Server, *received) {
	got := newReceived()
	var n atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := VerifyWebhook(secret.Load().(string), r.Header, body, time.Now(), 5*time.Minute); err != nil {
			t.Errorf("receiver: %v", err)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if code := fault(n.Add(1)); code != 0 {
			w.WriteHeader(code)
			return
		}
		var p WebhookPayload
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("receiver: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if want := "msg_"; !strings.HasPrefix(r.Header.Get("webhook-id"), want) {
			t.Errorf("webhook-id %q", r.Header.Get("webhook-id"))
		}
		var seqs []uint64
		for _, raw := range p.Data.Events {
			seq, treeSize, leafHash := proofData(t, raw)
			if treeSize < seq || len(leafHash) != 64 {
				t.Errorf("receiver: event %s", raw)
			}
			seqs = append(seqs, seq)
		}
		if len(seqs) == 0 || seqs[0] != p.Data.First || seqs[len(seqs)-1] != p.Data.Last {
			t.Errorf("receiver: first/last %d/%d for %v", p.Data.First, p.Data.Last, seqs)
		}
		got.add(seqs)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

// proofData reads the sequence, tree size and leaf hash a delivered event carries, in
// any of the three formats.
func proofData(t *testing.T, raw json.RawMessage) (seq, treeSize uint64, leafHash string) {
	t.Helper()
	var cef string
	if json.Unmarshal(raw, &cef) == nil {
		for _, f := range strings.Fields(cef) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "cn1":
				seq, _ = strconv.ParseUint(v, 10, 64)
			case "cn2":
				treeSize, _ = strconv.ParseUint(v, 10, 64)
			case "cs1":
				leafHash = v
			}
		}
		return seq, treeSize, leafHash
	}
	var m struct {
		Sequence uint64 `json:"sequence"`
		TreeSize uint64 `json:"treeSize"`
		LeafHash string `json:"leafHash"`
		Unmapped struct {
			Sealtrail struct {
				Sequence uint64 `json:"sequence"`
				TreeSize uint64 `json:"treeSize"`
				LeafHash string `json:"leafHash"`
			} `json:"sealtrail"`
		} `json:"unmapped"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Errorf("event %s: %v", raw, err)
	}
	if m.Sequence == 0 {
		return m.Unmapped.Sealtrail.Sequence, m.Unmapped.Sealtrail.TreeSize, m.Unmapped.Sealtrail.LeafHash
	}
	return m.Sequence, m.TreeSize, m.LeafHash
}

func TestWebhookAtLeastOnceInOrder(t *testing.T) {
	s := newStack(t)
	s.seal(150)
	var secret atomic.Value
	// The first three deliveries fail: the runner must retry the same range.
	srv, got := webhookReceiver(t, &secret, func(n int64) int {
		if n <= 3 {
			return http.StatusServiceUnavailable
		}
		return 0
	})
	st, generated, err := s.admin.Create(s.ctx, operator, s.project, Spec{Name: "soc", Kind: KindWebhook, Format: FormatJSON,
		Settings: Settings{URL: srv.URL + "/hook", CACert: caPEM(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(generated, "whsec_") || st.Settings.Secret != "(set)" {
		t.Fatalf("secret %q shown, settings %+v", generated, st.Settings)
	}
	secret.Store(generated)
	s.runner("r1", nil)
	got.waitFor(t, 150)
	s.seal(30) // new events after the backlog follow on
	got.waitFor(t, 180)
	got.checkOrder(t, 180, true)
	d := s.waitCursor(st.ID, 180)
	if d.Attempts != 0 || d.LastError != "" {
		t.Fatalf("after success: attempts %d, error %q", d.Attempts, d.LastError)
	}
	// The creation is in the project's audit stream, without the secret.
	rows, err := s.db.QueryEvents(s.ctx, catalog.Query{Log: catalog.LogID{ProjectID: s.project, Stream: catalog.StreamProjectAudit},
		Action: "siem_destination.created", Limit: 10})
	if err != nil || len(rows) != 1 || rows[0].TargetID != st.ID {
		t.Fatalf("audit rows %+v, %v", rows, err)
	}
	ev, err := s.seq.Events(s.ctx, catalog.LogID{ProjectID: s.project, Stream: catalog.StreamProjectAudit}, []uint64{rows[0].Sequence})
	if err != nil || bytes.Contains(ev[0].Payload, []byte(generated[6:])) || !bytes.Contains(ev[0].Payload, []byte(srv.URL)) {
		t.Fatalf("audit payload %s, %v", ev[0].Payload, err)
	}
}

// waitCursor waits until the destination's cursor reaches n.
func (s *stack) waitCursor(id string, n uint64) catalog.Destination {
	s.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		d, err := s.db.Destination(s.ctx, s.project, id)
		if err != nil {
			s.t.Fatal(err)
		}
		if d.Cursor >= n {
			return d
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("cursor %d, want %d", d.Cursor, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWebhookSignature(t *testing.T) {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	key, err := secretKey(secret)
	if err != nil {
		t.Fatal(err)
	}
	// The example of the Standard Webhooks specification.
	body := []byte(`{"test": 2432232314}`)
	if got, want := Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", body), "g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %s, want %s", got, want)
	}
	h := http.Header{}
	h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", "v1,bm9wZQ== v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	at := time.Unix(1614265330, 0)
	if err := VerifyWebhook(secret, h, body, at, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := VerifyWebhook(secret, h, []byte(`{"test": 2432232315}`), at, time.Minute); err == nil {
		t.Fatal("a changed body verified")
	}
	if err := VerifyWebhook(secret, h, body, at.Add(time.Hour), time.Minute); err == nil {
		t.Fatal("an old timestamp verified")
	}
}

// hecReceiver is a Splunk HEC endpoint: it checks the token, reads the concatenated
// event objects and records their sequences; OCSF events are validated against the
// vendored schema.
func hecReceiver(t *testing.T, token string, schemas map[int]*jsonschema.Schema) (*httptest.Server, *received) {
	got := newReceived()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/services/collector/event" || r.Header.Get("Authorization") != "Splunk "+token {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"text":"Invalid token","code":4}`)
			return
		}
		dec := json.NewDecoder(bufio.NewReader(r.Body))
		var seqs []uint64
		for {
			var ev struct {
				Time   json.Number     `json:"time"`
				Event  json.RawMessage `json:"event"`
				Fields struct {
					Sequence uint64 `json:"sequence"`
					TreeSize uint64 `json:"treeSize"`
					LeafHash string `json:"leafHash"`
				} `json:"fields"`
			}
			if err := dec.Decode(&ev); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Errorf("hec: %v", err)
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			if _, err := strconv.ParseFloat(string(ev.Time), 64); err != nil || ev.Fields.TreeSize < ev.Fields.Sequence || len(ev.Fields.LeafHash) != 64 {
				t.Errorf("hec: event fields %+v", ev)
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(ev.Event))
			if err != nil {
				t.Errorf("hec: %v", err)
			} else if err := schemas[6003].Validate(v); err != nil {
				t.Errorf("hec: OCSF: %v", err)
			} else if md := v.(map[string]any)["metadata"].(map[string]any); md["sequence"].(json.Number).String() != strconv.FormatUint(ev.Fields.Sequence, 10) {
				t.Errorf("hec: metadata.sequence %v, fields.sequence %d", md["sequence"], ev.Fields.Sequence)
			}
			seqs = append(seqs, ev.Fields.Sequence)
		}
		got.add(seqs)
		_, _ = io.WriteString(w, `{"text":"Success","code":0}`)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func TestHECDelivers(t *testing.T) {
	s := newStack(t)
	s.seal(95)
	srv, got := hecReceiver(t, "tok-123", ocsfSchemas(t))
	st, _, err := s.admin.Create(s.ctx, operator, s.project, Spec{Name: "splunk", Kind: KindHEC,
		Settings: Settings{URL: srv.URL, Token: "tok-123", CACert: caPEM(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Format != FormatOCSF || st.Settings.Token != "(set)" {
		t.Fatalf("status %+v", st)
	}
	// The token is sealed by the KEK in the catalog, never stored in clear.
	row, err := s.db.Destination(s.ctx, s.project, st.ID)
	if err != nil || bytes.Contains(row.Config, []byte("tok-123")) || !bytes.Contains(row.Config, []byte(`"sealed"`)) {
		t.Fatalf("stored config %s, %v", row.Config, err)
	}
	if _, err := openSettings(s.ctx, s.kek, "dst_other", row.Config); err == nil {
		t.Fatal("the sealed secrets opened under another destination's id")
	}
	s.runner("r1", nil)
	got.waitFor(t, 95)
	got.checkOrder(t, 95, true)
	s.waitCursor(st.ID, 95)
}

// TestDeadLetterAndResume: a receiver that keeps failing dead-letters the destination
// after MaxAttempts, with its error visible; resuming after the fix delivers from the
// cursor.
func TestDeadLetterAndResume(t *testing.T) {
	s := newStack(t)
	s.seal(10)
	var broken atomic.Bool
	broken.Store(true)
	var secret atomic.Value
	srv, got := webhookReceiver(t, &secret, func(int64) int {
		if broken.Load() {
			return http.StatusInternalServerError
		}
		return 0
	})
	st, sec, err := s.admin.Create(s.ctx, operator, s.project, Spec{Name: "soc", Kind: KindWebhook, Format: FormatCEF,
		Settings: Settings{URL: srv.URL, CACert: caPEM(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	secret.Store(sec)
	reg := prometheus.NewRegistry()
	s.runner("r1", func(c *RunnerConfig) { c.MaxAttempts = 3; c.Registerer = reg })
	var d Status
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if d, err = s.admin.Get(s.ctx, s.project, st.ID); err != nil {
			t.Fatal(err)
		}
		if d.State == string(catalog.DestDeadLetter) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not dead-lettered: %+v", d)
		}
	}
	if d.Attempts != 3 || !strings.Contains(d.LastError, "500") || d.Cursor != 0 || d.FailedAt == nil {
		t.Fatalf("dead letter status %+v", d)
	}
	if _, err := s.admin.SetState(s.ctx, operator, s.project, st.ID, catalog.DestDeadLetter); !errors.Is(err, control.ErrInvalid) {
		t.Fatalf("setting dead_letter by hand: %v", err)
	}
	if f, dl := metric(t, reg, "sealtrail_siem_delivery_failures_total"), metric(t, reg, "sealtrail_siem_dead_letters_total"); f != 3 || dl != 1 {
		t.Fatalf("metrics: %v failures, %v dead letters", f, dl)
	}
	broken.Store(false)
	if _, err := s.admin.SetState(s.ctx, operator, s.project, st.ID, catalog.DestActive); err != nil {
		t.Fatal(err)
	}
	got.waitFor(t, 10)
	got.checkOrder(t, 10, true)
	s.waitCursor(st.ID, 10)
	if n := metric(t, reg, "sealtrail_siem_events_delivered_total"); n != 10 {
		t.Fatalf("metrics: %v events delivered", n)
	}
}

// metric sums the samples of the counter name in reg.
func metric(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// TestRestartResumes stops a runner in the middle of a backlog, as a crash would, and
// starts another (another owner, as a new process) once the lease expires: it resumes
// from the cursor, and every event arrives, in order, at least once.
func TestRestartResumes(t *testing.T) {
	s := newStack(t)
	s.seal(400)
	var secret atomic.Value
	var slow atomic.Bool
	slow.Store(true)
	srv, got := webhookReceiver(t, &secret, func(int64) int {
		if slow.Load() {
			time.Sleep(5 * time.Millisecond)
		}
		return 0
	})
	st, sec, err := s.admin.Create(s.ctx, operator, s.project, Spec{Name: "soc", Kind: KindWebhook, Format: FormatJSON,
		Settings: Settings{URL: srv.URL, CACert: caPEM(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	secret.Store(sec)
	short := func(c *RunnerConfig) { c.LeaseTTL = 300 * time.Millisecond; c.BatchSize = 7 }
	stop := s.runner("first", short)
	got.waitFor(t, 50)
	stop()
	mid, err := s.db.Destination(s.ctx, s.project, st.ID)
	if err != nil || mid.Cursor == 0 || mid.Cursor >= 400 {
		t.Fatalf("cursor after the stop %d, %v", mid.Cursor, err)
	}
	slow.Store(false)
	s.runner("second", short)
	got.waitFor(t, 400)
	got.checkOrder(t, 400, false)
	s.waitCursor(st.ID, 400)
}

// TestOneRunnerPerDestination runs two runners (two replicas) on one catalog: the
// lease lets one deliver, so the receiver sees each range once, strictly in order.
func TestOneRunnerPerDestination(t *testing.T) {
	s := newStack(t)
	var secret atomic.Value
	var inFlight atomic.Int32
	srv, got := webhookReceiver(t, &secret, func(int64) int {
		if inFlight.Add(1) > 1 {
			t.Error("two deliveries at once")
		}
		time.Sleep(2 * time.Millisecond)
		inFlight.Add(-1)
		return 0
	})
	st, sec, err := s.admin.Create(s.ctx, operator, s.project, Spec{Name: "soc", Kind: KindWebhook, Format: FormatOCSF,
		Settings: Settings{URL: srv.URL, CACert: caPEM(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	secret.Store(sec)
	s.runner("a", nil)
	s.runner("b", nil)
	for range 6 {
		s.seal(40)
	}
	got.waitFor(t, 240)
	got.checkOrder(t, 240, true)
	s.waitCursor(st.ID, 240)
}

// lossyCatalog fails the cursor moves named by fail after the receiver took the
// batch, as a crash between delivery and the cursor's commit would.
type lossyCatalog struct {
	RunnerCatalog
	n    atomic.Int64
	fail func(n int64) bool
}

func (c *lossyCatalog) AdvanceDestination(ctx context.Context, id, owner string, from, to uint64, now time.Time) error {
	if c.fail(c.n.Add(1)) {
		return errors.New("injected: the cursor was not committed")
	}
	return c.RunnerCatalog.AdvanceDestination(ctx, id, owner, from, to, now)
}

// TestResendWhenCursorLost: a batch delivered whose cursor move is lost is delivered
// again (at least once), and delivery goes on from there in order, without a gap.
func TestResendWhenCursorLost(t *testing.T) {
	s := newStack(t)
	s.seal(100)
	var secret atomic.Value
	srv, got := webhookReceiver(t, &secret, func(int64) int { return 0 })
	st, sec, err := s.admin.Create(s.ctx, operator, s.project, Spec{Name: "soc", Kind: KindWebhook, Format: FormatJSON,
		Settings: Settings{URL: srv.URL, CACert: caPEM(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	secret.Store(sec)
	lossy := &lossyCatalog{RunnerCatalog: s.db, fail: func(n int64) bool { return n == 2 || n == 3 }}
	s.runner("r1", func(c *RunnerConfig) { c.Catalog = lossy })
	got.waitFor(t, 100)
	s.waitCursor(st.ID, 100)
	got.checkOrder(t, 100, false)
	got.mu.Lock()
	defer got.mu.Unlock()
	// Batches of 40: 1-40, 41-80 (lost), 41-80 (lost), 41-80, 81-100.
	want := [][2]uint64{{1, 40}, {41, 80}, {41, 80}, {41, 80}, {81, 100}}
	if len(got.batches) != len(want) {
		t.Fatalf("batches %v", got.batches)
	}
	for i, b := range got.batches {
		if b[0] != want[i][0] || b[len(b)-1] != want[i][1] {
			t.Fatalf("batch %d is %d-%d, want %d-%d", i, b[0], b[len(b)-1], want[i][0], want[i][1])
		}
	}
}

// TestFromNowAndPause: a destination created "from now" starts after the events
// already signed; a paused one receives nothing until resumed, then catches up.
func TestFromNowAndPause(t *testing.T) {
	s := newStack(t)
	s.seal(20)
	var secret atomic.Value
	srv, got := webhookReceiver(t, &secret, func(int64) int { return 0 })
	st, sec, err := s.admin.Create(s.ctx, operator, s.project, Spec{Name: "soc", Kind: KindWebhook, Format: FormatJSON, From: "now",
		Settings: Settings{URL: srv.URL, CACert: caPEM(srv)}})
	if err != nil {
		t.Fatal(err)
	}
	if st.Cursor != 20 {
		t.Fatalf("from now: cursor %d, want 20", st.Cursor)
	}
	secret.Store(sec)
	if _, err := s.admin.SetState(s.ctx, operator, s.project, st.ID, catalog.DestPaused); err != nil {
		t.Fatal(err)
	}
	s.runner("r1", nil)
	s.seal(5)
	time.Sleep(300 * time.Millisecond) // fifteen polls
	if n := len(got.distinct()); n != 0 {
		t.Fatalf("a paused destination received %d events", n)
	}
	if _, err := s.admin.SetState(s.ctx, operator, s.project, st.ID, catalog.DestActive); err != nil {
		t.Fatal(err)
	}
	s.waitCursor(st.ID, 25)
	if d := got.distinct(); !slices.Equal(d, []uint64{21, 22, 23, 24, 25}) {
		t.Fatalf("received %v, want 21-25", d)
	}
}
