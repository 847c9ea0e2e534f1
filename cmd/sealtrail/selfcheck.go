package main

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// selfcheckConfig is the small log the selfcheck builds: unsigned events, then a signed
// stretch, then unsigned again; the oldest shredded except one under legal hold.
var selfcheckConfig = sampleConfig{
	Seed:         "sealtrail selfcheck v1",
	ProjectID:    "prj_selfcheck",
	Stream:       tlog.StreamEvents,
	Events:       40,
	SignFrom:     11,
	SignThrough:  30,
	ShredThrough: 15,
	Held:         []uint64{7},
	Start:        time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC),
}

// selfcheckTampers is where the selfcheck forges its log, by tamper name.
var selfcheckTampers = map[string]uint64{
	"sequence-gap": 9, "content": 24, "leaf": 12, "signature": 20, "root": 35,
}

// runSelfcheck builds a small signed log in memory with tlog, exports it, verifies it,
// forges it each of the five ways and checks each forgery is caught, then checks one
// inclusion proof, one consistency proof and one signed tree head.
func runSelfcheck(e *env, args []string) error {
	fs := newFlagSet("selfcheck")
	if err := parseFlags(e, fs, "(no flags)", args); err != nil {
		return err
	}
	return selfcheck(e.stdout, &selfcheckConfig, selfcheckTampers)
}

// selfcheck runs the checks on the log of c, forged where tamperAt says, and reports on w.
func selfcheck(w io.Writer, c *sampleConfig, tamperAt map[string]uint64) error {
	lines, counts, root, err := sampleLines(c)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "selfcheck: built a log of %d events in memory (project %s, stream %s)\n", counts.Events, c.ProjectID, c.Stream)
	fmt.Fprintf(w, "           %d signed, %d unsigned, %d shredded; root %s\n", counts.Signed, counts.Unsigned, counts.Shredded, tlog.Hex(root))

	failed, total := 0, 0
	report := func(what string, err error) {
		total++
		if err != nil {
			failed++
			fmt.Fprintf(w, "  FAIL %s: %s\n", what, oneLine(err.Error()))
			return
		}
		fmt.Fprintf(w, "  ok   %s\n", what)
	}
	trusted := fullOptions{root: root, hasRoot: true, size: counts.Events, hasSize: true,
		keys: []ed25519.PublicKey{c.customerKey().Public().(ed25519.PublicKey)}}

	res, err := rebuildExport(bytes.NewReader(joinLines(lines)), trusted)
	if err == nil && (res.Stats.Signatures != counts.Signed || res.Stats.Shredded != counts.Shredded) {
		err = fmt.Errorf("checked %d signatures and %d shredded events, want %d and %d",
			res.Stats.Signatures, res.Stats.Shredded, counts.Signed, counts.Shredded)
	}
	report(fmt.Sprintf("untampered export verifies: %d events, %d commitments re-derived, %d signatures checked",
		res.Stats.Events, res.Stats.Rederived, res.Stats.Signatures), err)

	for _, t := range tampers {
		seq := tamperAt[t.Name]
		report(fmt.Sprintf("%-26s -> %s at sequence %d", t.Name+" forgery caught", t.Reason, tamperBreakAt(t, seq, counts.Events)),
			checkTamper(c, lines, t, seq, trusted))
	}
	report("inclusion proof of sequence 24 verifies; one for a forged leaf does not", checkInclusion(lines, 24))
	report(fmt.Sprintf("consistency proof 17 -> %d verifies; one from a forged old root does not", counts.Events), checkConsistency(lines, 17))
	report("signed tree head verifies; an edited one does not", checkSTH(c, counts.Events, root))

	if failed > 0 {
		fmt.Fprintf(w, "selfcheck: FAILED (%d of %d checks)\n", failed, total)
		return &failedError{msg: fmt.Sprintf("%d of %d checks failed; do not trust this build", failed, total)}
	}
	fmt.Fprintf(w, "selfcheck: OK (%d checks)\n", total)
	return nil
}

func tamperBreakAt(t tamper, seq, size uint64) uint64 {
	if t.Reason == tlog.BreakRootMismatch {
		return size
	}
	return seq
}

// checkTamper forges the export one way and checks verify full reports that break.
func checkTamper(c *sampleConfig, lines [][]byte, t tamper, seq uint64, trusted fullOptions) error {
	forged, breakAt, err := applyTamper(c, lines, t, seq)
	if err != nil {
		return err
	}
	_, err = rebuildExport(bytes.NewReader(joinLines(forged)), trusted)
	var cb *tlog.ChainBreak
	if !errors.As(err, &cb) {
		return fmt.Errorf("not detected (result: %v)", err)
	}
	if cb.Reason != t.Reason || cb.Sequence != breakAt {
		return fmt.Errorf("reported %s at sequence %d, want %s at %d", cb.Reason, cb.Sequence, t.Reason, breakAt)
	}
	return nil
}

// memoryTree loads an export's leaf hashes into a tlog.MemoryTree.
func memoryTree(lines [][]byte) (*tlog.MemoryTree, []tlog.Hash, error) {
	t := &tlog.MemoryTree{}
	var leaves []tlog.Hash
	for _, l := range lines {
		rec, err := tlog.DecodeExportLine(l)
		if err != nil {
			return nil, nil, err
		}
		if err := t.AppendLeafHash(rec.LeafHash); err != nil {
			return nil, nil, err
		}
		leaves = append(leaves, rec.LeafHash)
	}
	return t, leaves, nil
}

func checkInclusion(lines [][]byte, seq uint64) error {
	t, leaves, err := memoryTree(lines)
	if err != nil {
		return err
	}
	size := t.Size()
	root, err := t.Root(size)
	if err != nil {
		return err
	}
	p, err := tlog.ProveInclusion(seq-1, size, t)
	if err != nil {
		return err
	}
	if err := tlog.VerifyInclusion(leaves[seq-1], seq-1, size, p, root); err != nil {
		return err
	}
	if tlog.VerifyInclusion(leaves[seq], seq-1, size, p, root) == nil {
		return errors.New("a proof verified for the wrong leaf")
	}
	return nil
}

func checkConsistency(lines [][]byte, oldSize uint64) error {
	t, _, err := memoryTree(lines)
	if err != nil {
		return err
	}
	oldRoot, err := t.Root(oldSize)
	if err != nil {
		return err
	}
	newRoot, err := t.Root(t.Size())
	if err != nil {
		return err
	}
	p, err := tlog.ProveConsistency(oldSize, t.Size(), t)
	if err != nil {
		return err
	}
	if err := tlog.VerifyConsistency(oldSize, t.Size(), oldRoot, newRoot, p); err != nil {
		return err
	}
	forged := oldRoot
	forged[0] ^= 1
	if tlog.VerifyConsistency(oldSize, t.Size(), forged, newRoot, p) == nil {
		return errors.New("a proof verified from a forged old root")
	}
	return nil
}

func checkSTH(c *sampleConfig, size uint64, root tlog.Hash) error {
	resp, err := sampleSTH(c, size, root, c.Start.Add(24*time.Hour))
	if err != nil {
		return err
	}
	pub := c.serviceKey().Public().(ed25519.PublicKey)
	if err := tlog.VerifySTH(pub, &resp.STH); err != nil {
		return err
	}
	edited := resp.STH
	edited.TreeSize--
	if err := tlog.VerifySTH(pub, &edited); !errors.Is(err, tlog.ErrBadSignature) {
		return fmt.Errorf("an edited tree head gave %v, want a bad signature", err)
	}
	return nil
}
