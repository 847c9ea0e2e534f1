package wrap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"testing"

	"github.com/sealtrail/sealtrail/client"
)

// fakeLogger records events; err, when set, fails every Log; poison is what Err returns.
type fakeLogger struct {
	mu     sync.Mutex
	events []client.EventInput
	ctxErr []error
	err    error
	poison error
}

func (f *fakeLogger) Log(ctx context.Context, in client.EventInput) (*client.LogResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ctxErr = append(f.ctxErr, ctx.Err())
	if f.err != nil {
		return nil, f.err
	}
	f.events = append(f.events, in)
	return &client.LogResult{ID: "evt_x", Status: "sealed"}, nil
}

func (f *fakeLogger) Err() error { return f.poison }

type auditCall struct {
	err error
	ev  *client.EventInput
}

func newAuditor(t *testing.T, l Logger, failClosed bool) (*Auditor, *[]auditCall) {
	t.Helper()
	var calls []auditCall
	a, err := New(Options{Client: l, FailClosed: failClosed,
		OnAuditError: func(err error, ev *client.EventInput) { calls = append(calls, auditCall{err, ev}) }})
	if err != nil {
		t.Fatal(err)
	}
	return a, &calls
}

var alice = client.Entity{Type: "user", ID: "alice"}

type lookup struct{ Query string }

func TestToolRecordsCall(t *testing.T) {
	f := &fakeLogger{}
	a, audits := newAuditor(t, f, false)
	search := Tool(a, ToolSpec{Name: "search", HashIO: true, Risk: client.RiskLow},
		func(_ context.Context, in lookup) ([]string, error) { return []string{"r:" + in.Query}, nil })
	out, err := search(context.Background(), Call{ID: "call_7", Actor: alice, AgentID: "agent-1", Model: "m", Reason: "ticket 12",
		SessionID: "s1", Context: map[string]any{"channel": "chat"}}, lookup{"cats"})
	if err != nil || len(out) != 1 || out[0] != "r:cats" {
		t.Fatalf("result %v, %v", out, err)
	}
	if len(f.events) != 1 || len(*audits) != 0 {
		t.Fatalf("%d events, %d audit errors", len(f.events), len(*audits))
	}
	ev := f.events[0]
	sum := sha256.Sum256([]byte(`{"Query":"cats"}`))
	outSum := sha256.Sum256([]byte(`["r:cats"]`))
	if ev.Action != DefaultToolAction || ev.Actor != alice || *ev.Target != (client.Entity{Type: "tool", ID: "search"}) ||
		ev.ToolName != "search" || ev.ToolCallID != "call_7" || ev.AgentID != "agent-1" || ev.Model != "m" ||
		ev.SessionID != "s1" || ev.Status != client.StatusSuccess || ev.Risk != client.RiskLow ||
		ev.Context["channel"] != "chat" || ev.InputHash != hex.EncodeToString(sum[:]) || ev.OutputHash != hex.EncodeToString(outSum[:]) {
		t.Fatalf("event %+v", ev)
	}
	if _, ok := ev.Metadata["durationMs"].(int64); !ok || ev.Metadata["reason"] != "ticket 12" || ev.Metadata["error"] != nil {
		t.Fatalf("metadata %v", ev.Metadata)
	}
}

func TestToolFailureRecorded(t *testing.T) {
	f := &fakeLogger{}
	a, _ := newAuditor(t, f, false)
	boom := errors.New("boom")
	ctx, cancel := context.WithCancel(context.Background())
	tool := Tool(a, ToolSpec{Name: "deploy", Action: "agent.deploy"}, func(ctx context.Context, _ int) (int, error) {
		cancel()
		return 0, boom
	})
	if _, err := tool(ctx, Call{ID: "c", Actor: alice}, 1); !errors.Is(err, boom) {
		t.Fatalf("got %v, want the tool's error", err)
	}
	ev := f.events[0]
	if ev.Action != "agent.deploy" || ev.Status != client.StatusFailed || ev.Metadata["error"] != "boom" {
		t.Fatalf("event %+v", ev)
	}
	if f.ctxErr[0] != nil {
		t.Fatal("the audit event was sent with the cancelled context of the call")
	}
}

func TestToolRefusals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		spec      ToolSpec
		call      Call
		status    string
		check     func(error) bool
		authError bool
	}{
		{"reason missing", ToolSpec{Name: "wipe", RequireReason: true}, Call{ID: "c1", Actor: alice}, client.StatusFailed,
			func(err error) bool { var e *ReasonRequiredError; return errors.As(err, &e) && e.ToolName == "wipe" }, false},
		{"denied", ToolSpec{Name: "wipe", Authorize: func(context.Context, Call) (bool, error) { return false, nil }},
			Call{ID: "c2", Actor: alice, Reason: "r"}, client.StatusDenied,
			func(err error) bool {
				var e *DeniedError
				return errors.As(err, &e) && e.ToolName == "wipe" && e.Err == nil
			}, false},
		{"authorization check failed", ToolSpec{Name: "wipe", Authorize: func(context.Context, Call) (bool, error) {
			return true, errors.New("policy service down")
		}}, Call{ID: "c3", Actor: alice}, client.StatusDenied,
			func(err error) bool { var e *DeniedError; return errors.As(err, &e) && e.Err != nil }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeLogger{}
			a, _ := newAuditor(t, f, false)
			ran := false
			tool := Tool(a, tc.spec, func(context.Context, string) (string, error) { ran = true; return "done", nil })
			out, err := tool(context.Background(), tc.call, "x")
			if ran || out != "" || !tc.check(err) {
				t.Fatalf("ran %v, out %q, err %v", ran, out, err)
			}
			if len(f.events) != 1 {
				t.Fatalf("%d events written before the refusal, want 1", len(f.events))
			}
			ev := f.events[0]
			if ev.Status != tc.status || ev.ToolName != "wipe" || ev.ToolCallID != tc.call.ID || ev.Actor != alice {
				t.Fatalf("event %+v", ev)
			}
			if tc.authError && ev.Metadata["error"] != "policy service down" {
				t.Fatalf("metadata %v", ev.Metadata)
			}
		})
	}
}

func TestAuditFailure(t *testing.T) {
	down := errors.New("service down")
	ok := func(context.Context, int) (int, error) { return 42, nil }

	// Fail open (default): the result goes through; OnAuditError hears about it.
	f := &fakeLogger{err: down}
	a, audits := newAuditor(t, f, false)
	out, err := Tool(a, ToolSpec{Name: "t"}, ok)(context.Background(), Call{ID: "c", Actor: alice}, 1)
	if out != 42 || err != nil || len(*audits) != 1 || !errors.Is((*audits)[0].err, down) || (*audits)[0].ev.ToolName != "t" {
		t.Fatalf("fail open: %v, %v, audits %+v", out, err, *audits)
	}

	// Fail closed: the caller gets an *AuditError instead of the result.
	a, audits = newAuditor(t, f, true)
	out, err = Tool(a, ToolSpec{Name: "t"}, ok)(context.Background(), Call{ID: "c", Actor: alice}, 1)
	var ae *AuditError
	if out != 0 || !errors.As(err, &ae) || !errors.Is(err, down) || ae.Event.ToolName != "t" || len(*audits) != 1 {
		t.Fatalf("fail closed: %v, %v", out, err)
	}

	// Fail closed with a refusal whose event cannot be written: both errors.
	_, err = Tool(a, ToolSpec{Name: "t", RequireReason: true}, ok)(context.Background(), Call{ID: "c", Actor: alice}, 1)
	var rr *ReasonRequiredError
	if !errors.As(err, &rr) || !errors.As(err, &ae) {
		t.Fatalf("refusal, fail closed: %v", err)
	}

	// Fail closed with a poisoned client: the operation does not start.
	poisoned := &fakeLogger{poison: &client.TamperError{Reason: client.ReasonTreeShrunk}}
	a, _ = newAuditor(t, poisoned, true)
	ran := false
	_, err = Tool(a, ToolSpec{Name: "t"}, func(context.Context, int) (int, error) { ran = true; return 1, nil })(
		context.Background(), Call{ID: "c", Actor: alice}, 1)
	if ran || !errors.Is(err, client.ErrTampered) || !errors.As(err, &ae) {
		t.Fatalf("poisoned, fail closed: ran %v, %v", ran, err)
	}

	// An event that cannot be built (no actor) refuses the call in either mode.
	f = &fakeLogger{}
	a, audits = newAuditor(t, f, false)
	ran = false
	_, err = Tool(a, ToolSpec{Name: "t"}, func(context.Context, int) (int, error) { ran = true; return 1, nil })(
		context.Background(), Call{ID: "c"}, 1)
	if ran || err == nil || len(*audits) != 1 || len(f.events) != 0 {
		t.Fatalf("no actor: ran %v, err %v, %d audit errors", ran, err, len(*audits))
	}
}

func TestRunAndDo(t *testing.T) {
	f := &fakeLogger{}
	a, _ := newAuditor(t, f, false)
	md := map[string]any{"invoice": "inv_1"}
	ev := client.EventInput{Action: "invoice.send", Actor: alice, Metadata: md}
	n, err := Run(context.Background(), a, ev, func(context.Context) (int, error) { return 3, nil })
	if n != 3 || err != nil {
		t.Fatal(n, err)
	}
	bad := errors.New("smtp")
	if err := Do(context.Background(), a, ev, func(context.Context) error { return bad }); !errors.Is(err, bad) {
		t.Fatal(err)
	}
	if len(f.events) != 2 || f.events[0].Status != client.StatusSuccess || f.events[1].Status != client.StatusFailed ||
		f.events[1].Metadata["error"] != "smtp" || f.events[0].Metadata["invoice"] != "inv_1" {
		t.Fatalf("events %+v", f.events)
	}
	if len(md) != 1 {
		t.Fatalf("the caller's metadata was modified: %v", md)
	}
	// An explicit status is kept.
	ev.Status = client.StatusApproved
	_ = Do(context.Background(), a, ev, func(context.Context) error { return nil })
	if f.events[2].Status != client.StatusApproved {
		t.Fatalf("status %q", f.events[2].Status)
	}
}

func TestNew(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Fatal("New without Client or Config succeeded")
	}
	if _, err := New(Options{Config: &client.Config{}}); err == nil {
		t.Fatal("New with an invalid Config succeeded")
	}
	a, err := New(Options{Config: &client.Config{APIKey: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := a.log.(*client.Client); !ok {
		t.Fatalf("built %T, want *client.Client", a.log)
	}
}
