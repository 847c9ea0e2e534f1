package wrap

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sealtrail/sealtrail/client"
)

// DefaultToolAction is the action of tool-call events unless ToolSpec.Action is set.
const DefaultToolAction = "tool.call"

// ToolSpec describes a tool once, where it is wrapped.
type ToolSpec struct {
	// Name is the tool's name, recorded as toolName (required).
	Name string
	// Action is the event action (default DefaultToolAction).
	Action string
	// Risk, when set, is recorded as the event's risk.
	Risk string
	// Target is the event target (default {type: "tool", id: Name}).
	Target *client.Entity
	// RequireReason refuses calls without Call.Reason: a failed event is written, then
	// a *ReasonRequiredError is returned and the tool does not run.
	RequireReason bool
	// Authorize, when set, is asked before each call. false, or an error, writes a
	// denied event and returns a *DeniedError; the tool does not run.
	Authorize func(ctx context.Context, call Call) (bool, error)
	// HashIO records inputHash and outputHash: SHA-256 of the JSON of the tool's input
	// and output, committing to them without storing them.
	HashIO bool
}

// Call is who calls a tool, and why: one invocation by an agent or a user.
type Call struct {
	// ID is the tool call id (toolCallId), e.g. the model's tool_call id.
	ID string
	// Actor is who called the tool (required).
	Actor client.Entity
	// Reason is why; required when the tool's spec says so. Recorded in metadata.
	Reason string
	// Optional attribution.
	AgentID, Model, SessionID, RequestID, ApprovalID, PolicyVersion string
	// Context is recorded as the event's context.
	Context map[string]any
}

// Tool wraps fn so that every call is recorded: who called which tool with which call
// id, its outcome (success, failed, denied) and its duration in metadata.durationMs,
// with the error and the reason when there are any.
func Tool[In, Out any](a *Auditor, spec ToolSpec, fn func(context.Context, In) (Out, error)) func(context.Context, Call, In) (Out, error) {
	if spec.Action == "" {
		spec.Action = DefaultToolAction
	}
	if spec.Target == nil {
		spec.Target = &client.Entity{Type: "tool", ID: spec.Name}
	}
	return func(ctx context.Context, call Call, in In) (Out, error) {
		var zero Out
		ev := spec.event(call)
		if err := a.preflight(&ev); err != nil {
			return zero, err
		}
		if spec.Name == "" || call.Actor.Type == "" || call.Actor.ID == "" {
			// The event cannot be built; the call is refused rather than run unrecorded
			// under a made-up name or actor.
			err := errors.New("wrap: a tool call needs ToolSpec.Name and Call.Actor (type and id)")
			a.report(err, &ev)
			return zero, err
		}
		if spec.RequireReason && call.Reason == "" {
			ev.Status = client.StatusFailed
			ev.Metadata = withOutcome(ev.Metadata, 0, nil)
			ev.Metadata["error"] = "reason required"
			refused := &ReasonRequiredError{ToolName: spec.Name}
			return zero, withAudit(refused, a.record(ctx, &ev))
		}
		if spec.Authorize != nil {
			ok, err := spec.Authorize(ctx, call)
			if !ok || err != nil {
				ev.Status = client.StatusDenied
				ev.Metadata = withOutcome(ev.Metadata, 0, err)
				denied := &DeniedError{ToolName: spec.Name, Err: err}
				return zero, withAudit(denied, a.record(ctx, &ev))
			}
		}
		if spec.HashIO {
			if h, err := hashJSON(in); err == nil {
				ev.InputHash = h
			} else {
				a.report(fmt.Errorf("wrap: hash tool input: %w", err), &ev)
			}
		}
		start := time.Now()
		out, err := fn(ctx, in)
		ev.Metadata = withOutcome(ev.Metadata, time.Since(start), err)
		ev.Status = statusOf(err)
		if spec.HashIO && err == nil {
			if h, herr := hashJSON(out); herr == nil {
				ev.OutputHash = h
			} else {
				a.report(fmt.Errorf("wrap: hash tool output: %w", herr), &ev)
			}
		}
		if aerr := a.record(ctx, &ev); aerr != nil {
			return zero, withAudit(err, aerr)
		}
		return out, err
	}
}

// event is the tool-call event of call before its outcome is known.
func (spec ToolSpec) event(call Call) client.EventInput {
	ev := client.EventInput{
		Action:        spec.Action,
		Actor:         call.Actor,
		Target:        spec.Target,
		Risk:          spec.Risk,
		Context:       call.Context,
		ToolName:      spec.Name,
		ToolCallID:    call.ID,
		AgentID:       call.AgentID,
		Model:         call.Model,
		SessionID:     call.SessionID,
		RequestID:     call.RequestID,
		ApprovalID:    call.ApprovalID,
		PolicyVersion: call.PolicyVersion,
	}
	if call.Reason != "" {
		ev.Metadata = map[string]any{"reason": call.Reason}
	}
	return ev
}
