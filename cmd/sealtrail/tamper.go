package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// tamper is one way to forge an export and the break `verify full` must report for it,
// given the trusted size, root and signing key of the untampered log. The five cover the
// five ChainBreak reasons; each is the cheapest forgery the next check down would miss.
type tamper struct {
	Name   string // the fixture is tampered-<Name>.ndjson
	Reason string // the ChainBreak reason expected
	Change string // what the forger did, for reports
	// needs says what kind of event the forgery must hit to reach its check.
	needs func(c *sampleConfig, seq uint64) error
	apply func(c *sampleConfig, rec *tlog.Record) error // nil: the line is deleted
}

var tampers = []tamper{
	{
		Name: "sequence-gap", Reason: tlog.BreakSequenceGap,
		Change: "the line was deleted",
		needs:  func(*sampleConfig, uint64) error { return nil },
	},
	{
		Name: "content", Reason: tlog.BreakContentTampered,
		Change: "actor.id of the payload was edited; the recorded commitment was left",
		needs:  needLive,
		apply: func(_ *sampleConfig, rec *tlog.Record) error {
			p, err := editActor(rec.Payload)
			rec.Payload = p
			return err
		},
	},
	{
		Name: "leaf", Reason: tlog.BreakLeafMismatch,
		Change: "the timestamp was moved one hour back; the recorded leafHash was left",
		needs:  func(*sampleConfig, uint64) error { return nil },
		apply: func(_ *sampleConfig, rec *tlog.Record) error {
			t, err := tlog.ParseTime(rec.Leaf.Timestamp)
			rec.Leaf.Timestamp = tlog.FormatTime(t.Add(-time.Hour))
			return err
		},
	},
	{
		Name: "signature", Reason: tlog.BreakInvalidClientSignature,
		Change: "clientSignature was replaced by a valid-looking signature of another key, and leafHash recomputed to match",
		needs: func(c *sampleConfig, seq uint64) error {
			if !c.signed(seq) {
				return errors.New("needs a signed event")
			}
			return nil
		},
		apply: func(c *sampleConfig, rec *tlog.Record) error {
			rec.Leaf.Signature = tlog.SignEvent(c.forgerKey(), rec.Leaf.ID, rec.Leaf.PayloadHash)
			rec.LeafHash = rec.Leaf.Hash()
			return nil
		},
	},
	{
		Name: "root", Reason: tlog.BreakRootMismatch,
		Change: "actor.id of the payload was edited, and payloadHash and leafHash recomputed to match",
		needs: func(c *sampleConfig, seq uint64) error {
			if c.signed(seq) {
				// The customer signature would catch it first.
				return errors.New("needs an unsigned event")
			}
			return needLive(c, seq)
		},
		apply: func(_ *sampleConfig, rec *tlog.Record) error {
			p, err := editActor(rec.Payload)
			if err != nil {
				return err
			}
			if rec.Payload, rec.Leaf.PayloadHash, err = tlog.CommitPayload(*rec.Nonce, p); err != nil {
				return err
			}
			rec.LeafHash = rec.Leaf.Hash()
			return nil
		},
	},
}

func needLive(c *sampleConfig, seq uint64) error {
	if c.shredded(seq) {
		return errors.New("needs an event that was not shredded")
	}
	return nil
}

// editActor rewrites the payload so another actor did it: the classic forgery of an
// audit log.
func editActor(payload []byte) ([]byte, error) {
	var p map[string]any
	if err := json.Unmarshal(payload, &p); err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	actor, ok := p["actor"].(map[string]any)
	if !ok {
		return nil, errors.New("payload has no actor object")
	}
	actor["id"] = "usr_01HZ7MAL"
	actor["display"] = "Mallory"
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("payload: %w", err)
	}
	return tlog.Canonicalize(raw)
}

// applyTamper returns a copy of lines (an untampered export of c, line i holding
// sequence i+1) with t applied at sequence seq, and the sequence the break is expected
// at: seq itself, or for root_mismatch the trusted size at which roots are compared.
func applyTamper(c *sampleConfig, lines [][]byte, t tamper, seq uint64) (out [][]byte, breakAt uint64, err error) {
	if seq < 1 || seq > uint64(len(lines)) {
		return nil, 0, fmt.Errorf("tamper %s: sequence %d outside the log", t.Name, seq)
	}
	if err := t.needs(c, seq); err != nil {
		return nil, 0, fmt.Errorf("tamper %s at sequence %d: %w", t.Name, seq, err)
	}
	breakAt = seq
	if t.Reason == tlog.BreakRootMismatch {
		breakAt = uint64(len(lines))
	}
	if t.apply == nil {
		return slices.Delete(slices.Clone(lines), int(seq-1), int(seq)), breakAt, nil
	}
	rec, err := tlog.DecodeExportLine(lines[seq-1])
	if err != nil {
		return nil, 0, fmt.Errorf("tamper %s: %w", t.Name, err)
	}
	if err := t.apply(c, &rec); err != nil {
		return nil, 0, fmt.Errorf("tamper %s at sequence %d: %w", t.Name, seq, err)
	}
	line, err := tlog.EncodeStoredEvent(&rec)
	if err != nil {
		return nil, 0, fmt.Errorf("tamper %s: %w", t.Name, err)
	}
	out = slices.Clone(lines)
	out[seq-1] = line
	return out, breakAt, nil
}
