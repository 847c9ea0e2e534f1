// Package wrap records application code and agent tool calls in Sealtrail. A wrapped
// call runs the caller's function and writes one event describing who did what, its
// outcome and its duration. A wrapped tool can also require a reason and ask an
// authorization check before it runs; a refused call writes a failed or denied event and
// returns a typed error naming the tool.
//
// Audit failures (building or sending an event) are reported to Options.OnAuditError.
// By default they let the operation go on; with Options.FailClosed they stop it (see
// Options.FailClosed for exactly what that means).
package wrap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/sealtrail/sealtrail/client"
)

// Logger is what a wrapper needs of a client: *client.Client, or a fake in tests.
type Logger interface {
	Log(ctx context.Context, in client.EventInput) (*client.LogResult, error)
}

// Options are the runtime options of every wrapper (spec, "Wrapper runtime options").
type Options struct {
	// Client records the events. When nil, one is built from Config.
	Client Logger
	// Config builds the client when Client is nil.
	Config *client.Config
	// FailClosed turns audit failures into errors that stop the operation:
	//   - an operation is not started while the client reports an error (a poisoned
	//     *client.Client returns its *client.TamperError from Err);
	//   - when the outcome event cannot be written, the wrapper returns an *AuditError
	//     and the zero result instead of the operation's result, so the caller does not
	//     go on with an unaudited result. (The operation itself has already run; an
	//     operation that must not run unaudited writes its own pending event first.)
	// By default (false) audit failures only reach OnAuditError.
	FailClosed bool
	// OnAuditError is called whenever building or sending an event fails, with the
	// event when one was built.
	OnAuditError func(err error, input *client.EventInput)
}

// Auditor holds the options shared by the wrappers.
type Auditor struct {
	opts Options
	log  Logger
}

// New returns an Auditor; it builds a client from opts.Config when opts.Client is nil.
func New(opts Options) (*Auditor, error) {
	l := opts.Client
	if l == nil {
		if opts.Config == nil {
			return nil, errors.New("wrap: Options needs a Client or a Config")
		}
		c, err := client.New(*opts.Config)
		if err != nil {
			return nil, fmt.Errorf("wrap: %w", err)
		}
		l = c
	}
	return &Auditor{opts: opts, log: l}, nil
}

// AuditError is returned, with FailClosed, when an audit event could not be written
// (or the client refused to write it). Event is the event that was not recorded.
type AuditError struct {
	Err   error
	Event *client.EventInput
}

func (e *AuditError) Error() string { return "audit event not recorded: " + e.Err.Error() }

// Unwrap returns the cause, such as a *client.APIError or *client.TamperError.
func (e *AuditError) Unwrap() error { return e.Err }

// ReasonRequiredError is returned when a tool that requires a reason is called without
// one. The failed event has already been written (or its failure reported).
type ReasonRequiredError struct{ ToolName string }

func (e *ReasonRequiredError) Error() string {
	return fmt.Sprintf("tool %s requires a reason", e.ToolName)
}

// DeniedError is returned when a tool's authorization check refused a call. The denied
// event has already been written (or its failure reported).
type DeniedError struct {
	ToolName string
	// Err is the authorization check's error, when it failed rather than refused.
	Err error
}

func (e *DeniedError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("tool %s denied: authorization check failed: %v", e.ToolName, e.Err)
	}
	return fmt.Sprintf("tool %s denied by the authorization check", e.ToolName)
}

// Unwrap returns the authorization check's error, if any.
func (e *DeniedError) Unwrap() error { return e.Err }

// preflight refuses to start an operation, with FailClosed, while the client reports
// an error.
func (a *Auditor) preflight(ev *client.EventInput) error {
	if !a.opts.FailClosed {
		return nil
	}
	if e, ok := a.log.(interface{ Err() error }); ok {
		if err := e.Err(); err != nil {
			a.report(err, ev)
			return &AuditError{Err: err, Event: ev}
		}
	}
	return nil
}

// record writes ev. It returns an *AuditError only with FailClosed; otherwise failures
// reach OnAuditError alone.
func (a *Auditor) record(ctx context.Context, ev *client.EventInput) error {
	// The audit record must be written even when the operation's context was
	// cancelled: that is often the very outcome worth recording.
	_, err := a.log.Log(context.WithoutCancel(ctx), *ev)
	if err == nil {
		return nil
	}
	a.report(err, ev)
	if a.opts.FailClosed {
		return &AuditError{Err: err, Event: ev}
	}
	return nil
}

func (a *Auditor) report(err error, ev *client.EventInput) {
	if a.opts.OnAuditError != nil {
		a.opts.OnAuditError(err, ev)
	}
}

// Run runs fn and records ev with its outcome: status success or failed (unless ev
// sets one), metadata durationMs and, on failure, error. ev.Metadata is copied, never
// modified.
func Run[T any](ctx context.Context, a *Auditor, ev client.EventInput, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	if err := a.preflight(&ev); err != nil {
		return zero, err
	}
	start := time.Now()
	out, err := fn(ctx)
	ev.Metadata = withOutcome(ev.Metadata, time.Since(start), err)
	if ev.Status == "" {
		ev.Status = statusOf(err)
	}
	if aerr := a.record(ctx, &ev); aerr != nil {
		return zero, withAudit(err, aerr)
	}
	return out, err
}

// Do is Run for functions without a result.
func Do(ctx context.Context, a *Auditor, ev client.EventInput, fn func(context.Context) error) error {
	_, err := Run(ctx, a, ev, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	return err
}

func statusOf(err error) string {
	if err != nil {
		return client.StatusFailed
	}
	return client.StatusSuccess
}

func withOutcome(md map[string]any, d time.Duration, err error) map[string]any {
	out := make(map[string]any, len(md)+2)
	maps.Copy(out, md)
	out["durationMs"] = d.Milliseconds()
	if err != nil {
		out["error"] = err.Error()
	}
	return out
}

// withAudit combines an operation's error with an audit error; either may be nil. A
// lone error is returned as is, so a type assertion on it still works.
func withAudit(err, audit error) error {
	switch {
	case audit == nil:
		return err
	case err == nil:
		return audit
	}
	return errors.Join(err, audit)
}

// hashJSON is the inputHash/outputHash of a value: lowercase hex SHA-256 of its JSON.
func hashJSON(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
