package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sealtrail/sealtrail/tlog"
)

// Shredded events in an export, and the retention.shredded records that must name them
// (docs/retention.md, docs/verifier.md).

// seqRange is an inclusive range of sequences.
type seqRange struct{ first, last uint64 }

// shredRuns accumulates the runs of consecutive shredded sequences of an export.
type shredRuns []seqRange

func (r *shredRuns) add(seq uint64) {
	if n := len(*r); n > 0 && (*r)[n-1].last+1 == seq {
		(*r)[n-1].last = seq
		return
	}
	*r = append(*r, seqRange{seq, seq})
}

// auditRanges reads a project_audit export and returns, for the project and stream
// given, the sequence ranges its retention.shredded records name, sorted. Every line
// must be a well-formed export line of one project's project_audit stream.
func auditRanges(r io.Reader, project, stream string) ([]seqRange, error) {
	var out []seqRange
	quit := make(chan struct{})
	defer close(quit)
	noCheck := func(*tlog.Record) tlog.Check { return tlog.Check{} }
	for b := range decodeLines(r, quit, noCheck) {
		<-b.done
		for i := range b.recs {
			line := b.first + uint64(i)
			if err := b.errs[i]; err != nil {
				return nil, fmt.Errorf("--audit line %d: %w", line, err)
			}
			rec := &b.recs[i]
			if rec.Leaf.Stream != "project_audit" || rec.Leaf.ProjectID != project {
				return nil, fmt.Errorf("--audit line %d: not the project_audit stream of project %s", line, project)
			}
			if rec.Shredded() {
				continue
			}
			var rp struct {
				Action   string `json:"action"`
				Metadata struct {
					Stream        string  `json:"stream"`
					FirstSequence *uint64 `json:"firstSequence"`
					LastSequence  *uint64 `json:"lastSequence"`
					Count         uint64  `json:"count"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(rec.Payload, &rp); err != nil {
				return nil, fmt.Errorf("--audit line %d: payload: %w", line, err)
			}
			m := rp.Metadata
			if rp.Action != "retention.shredded" || m.Stream != stream || m.Count == 0 {
				continue
			}
			if m.FirstSequence == nil || m.LastSequence == nil || *m.FirstSequence == 0 || *m.LastSequence < *m.FirstSequence {
				return nil, fmt.Errorf("--audit line %d: retention.shredded record without a valid sequence range", line)
			}
			out = append(out, seqRange{*m.FirstSequence, *m.LastSequence})
		}
		if b.err != nil {
			return nil, fmt.Errorf("--audit: %w", b.err)
		}
	}
	slices.SortFunc(out, func(a, b seqRange) int {
		if a.first != b.first {
			return cmpU(a.first, b.first)
		}
		return cmpU(a.last, b.last)
	})
	return out, nil
}

func cmpU(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// uncovered returns the first shredded sequence of runs that no range of named covers
// (ranges sorted by first), and whether there is one.
func uncovered(runs shredRuns, named []seqRange) (uint64, bool) {
	for _, run := range runs {
		for seq := run.first; seq <= run.last; {
			// the range starting at or before seq that reaches furthest
			reach := uint64(0)
			for _, r := range named {
				if r.first > seq {
					break
				}
				reach = max(reach, r.last)
			}
			if reach < seq {
				return seq, true
			}
			if reach >= run.last {
				break
			}
			seq = reach + 1
		}
	}
	return 0, false
}

// checkAudit opens the --audit file and checks every shredded run of res against it.
func checkAudit(e *env, path string, res *fullResult) error {
	in, _, closeIn, err := openExport(e, path)
	if err != nil {
		return errors.New(strings.Replace(err.Error(), "--export", "--audit", 1))
	}
	defer closeIn()
	named, err := auditRanges(in, res.Project, res.Stream)
	if err != nil {
		return err
	}
	if seq, ok := uncovered(res.Shredded, named); ok {
		return &tamperError{msg: fmt.Sprintf("sequence %d is shredded but no retention.shredded record in the audit export names it", seq)}
	}
	return nil
}

// printShredded lists the shredded ranges seen.
func printShredded(w io.Writer, runs shredRuns) {
	if len(runs) == 0 {
		return
	}
	fmt.Fprintf(w, "shredded:     ")
	for i, r := range runs {
		if i > 0 {
			fmt.Fprint(w, ", ")
		}
		if i == 20 {
			fmt.Fprintf(w, "... (%d ranges)", len(runs))
			break
		}
		if r.first == r.last {
			fmt.Fprintf(w, "%d", r.first)
		} else {
			fmt.Fprintf(w, "%d-%d", r.first, r.last)
		}
	}
	fmt.Fprintln(w)
}
