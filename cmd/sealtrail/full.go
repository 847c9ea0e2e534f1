package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/sealtrail/sealtrail/tlog"
)

const fullUsage = "--export <file.ndjson|-> [--root <hex>] [--size <n>] [--signing-key <hex>[,<hex>...]]... [--audit <project_audit export>]"

// maxLineSize bounds one export line. The scanner's buffer grows to the longest line
// actually seen, so the generous bound costs nothing on ordinary exports.
const maxLineSize = 64 << 20

// progressEvery is how many lines pass between two calls of fullOptions.progress.
const progressEvery = 1024

// fullOptions are the trusted inputs of a rebuild.
type fullOptions struct {
	root    tlog.Hash // trusted root, when hasRoot
	hasRoot bool
	size    uint64 // trusted size, when hasSize; the root is compared at this size
	hasSize bool
	keys    []ed25519.PublicKey // customer keys; a signature is valid under any of them
	// progress, when set, is called every progressEvery lines with the lines read so far.
	progress func(lines uint64)
}

// fullResult is what a rebuild found, also when it stopped at a break.
type fullResult struct {
	Project, Stream string
	Stats           tlog.RebuildStats
	Signed          uint64           // events carrying a customer signature, checked or not
	Size            uint64           // leaves rebuilt
	Root            tlog.Hash        // root of the leaves rebuilt
	SizeRoot        tlog.Hash        // root at the trusted size, once reached (hasSize)
	Shredded        shredRuns        // runs of shredded sequences (shred.go)
	AuditErr        error            // a shredded sequence the --audit export does not name
	Break           *tlog.ChainBreak // first tamper, or nil
}

// rebuildExport streams a JSON export through a tlog.Rebuilder, parsing and checking
// lines on every core (see decodeLines). Memory stays flat: a few batches of lines in
// flight and the rebuilder's O(log n) compact range are all it holds. It returns the result so far and, on the first tamper, a
// *tlog.ChainBreak; any other error means the input is not a whole stream's export
// (exit 2) and names the line.
func rebuildExport(r io.Reader, opts fullOptions) (*fullResult, error) {
	var keys func(string) []ed25519.PublicKey
	if len(opts.keys) > 0 {
		// Any given key may have made any signature: the verifier does not map key ids
		// to keys, so a rotated or re-registered key is simply passed as well.
		keys = func(string) []ed25519.PublicKey { return opts.keys }
	}
	rb := tlog.NewRebuilder(tlog.RebuildOptions{SigningKeys: keys})
	res := &fullResult{}
	defer func() {
		res.Project, res.Stream = rb.ProjectID(), rb.Stream()
		res.Stats, res.Size = rb.Stats, rb.Size()
		if res.Break == nil {
			res.Root = rb.Root()
		}
	}()
	fail := func(err error) (*fullResult, error) {
		var cb *tlog.ChainBreak
		if errors.As(err, &cb) {
			res.Break = cb
		}
		return res, err
	}

	quit := make(chan struct{})
	defer close(quit)
	var line uint64
	for b := range decodeLines(r, quit, rb.Precheck) {
		<-b.done
		for i := range b.recs {
			line = b.first + uint64(i)
			if err := b.errs[i]; err != nil {
				return fail(fmt.Errorf("line %d: %w", line, err))
			}
			rec := &b.recs[i]
			if rec.Leaf.Signature != "" {
				res.Signed++
			}
			if rec.Shredded() {
				res.Shredded.add(rec.Leaf.Sequence)
			}
			if err := rb.AddChecked(rec, &b.checks[i]); err != nil {
				var cb *tlog.ChainBreak
				if errors.As(err, &cb) {
					return fail(err)
				}
				return fail(fmt.Errorf("line %d: %w", line, err))
			}
			if opts.hasSize && rb.Size() == opts.size {
				res.SizeRoot = rb.Root()
				if opts.hasRoot {
					if err := rb.CheckRoot(opts.size, opts.root); err != nil {
						return fail(err)
					}
				}
			}
			if opts.progress != nil && line%progressEvery == 0 {
				opts.progress(line)
			}
		}
		if b.err != nil {
			return fail(b.err)
		}
	}
	if line == 0 {
		return fail(errors.New("export is empty: a whole stream's export has at least one event"))
	}
	switch {
	case opts.hasSize && rb.Size() < opts.size:
		// The trusted tree is larger than the export: rows are missing at the end.
		return fail(&tlog.ChainBreak{Sequence: rb.Size() + 1, Reason: tlog.BreakSequenceGap,
			Detail: fmt.Sprintf("export ends at sequence %d, trusted tree has %d leaves", rb.Size(), opts.size)})
	case opts.hasRoot && !opts.hasSize:
		if err := rb.CheckRoot(rb.Size(), opts.root); err != nil {
			return fail(err)
		}
	}
	return res, nil
}

// fullGCPercent is the GOGC of verify full (see runVerifyFull).
const fullGCPercent = 800

func runVerifyFull(e *env, args []string) error {
	fs := newFlagSet("verify full")
	export := fs.String("export", "", "`file` holding the JSON export of the whole stream (newline-delimited stored events); - reads stdin")
	var root hashFlag
	var size uintFlag
	var keys keysFlag
	fs.Var(&root, "root", "trusted root `hash` (hex) to compare the rebuilt root with")
	fs.Var(&size, "size", "trusted tree `size`; the root is compared at this size (default: the export's length)")
	fs.Var(&keys, "signing-key", "customer Ed25519 public `key` (hex) to re-check signatures; repeat or comma-separate for several")
	audit := fs.String("audit", "", "`file` holding the project's project_audit export: every shredded event must fall in a range a retention.shredded record names")
	if err := parseFlags(e, fs, fullUsage, args); err != nil {
		return err
	}
	if err := required(fs, "export"); err != nil {
		return err
	}
	if *export == "" {
		return errors.New("--export is empty")
	}
	if size.set && size.n == 0 {
		return errors.New("--size must be at least 1: an export holds at least one event")
	}
	in, name, closeIn, err := openExport(e, *export)
	if err != nil {
		return err
	}
	defer closeIn()

	opts := fullOptions{root: root.h, hasRoot: root.set, size: size.n, hasSize: size.set, keys: keys.keys}
	var p *progress
	if e.stderrIsTTY {
		p = newProgress(e.stderr, in)
		opts.progress = p.update
		in = p
	}
	// The live heap stays a few batches of lines (decodeLines), so the default GOGC
	// collected every few thousand events, and the collector's stops and assists
	// cost as much as a fifth of the run on two cores. Let the heap grow to several
	// times that before collecting: still tens of megabytes, whatever the export's size.
	defer debug.SetGCPercent(debug.SetGCPercent(fullGCPercent))
	res, err := rebuildExport(in, opts)
	if p != nil {
		p.clear()
	}
	if err != nil && res.Break == nil {
		if name != "" {
			return fmt.Errorf("%s: %w", name, err)
		}
		return err
	}
	if err == nil && *audit != "" {
		if err = checkAudit(e, *audit, res); err != nil {
			var te *tamperError
			if !errors.As(err, &te) {
				return err
			}
			res.AuditErr = err
		}
	}
	printFull(e.stdout, res, opts)
	return err
}

// openExport opens the export file, or stdin for "-". Failures are input errors.
func openExport(e *env, path string) (r io.Reader, name string, closeFn func(), err error) {
	if path == "-" {
		return e.stdin, "", func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", nil, fmt.Errorf("--export: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, "", nil, fmt.Errorf("--export: %w", err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, "", nil, fmt.Errorf("--export: %s is a directory", path)
	}
	return f, path, func() { f.Close() }, nil
}

// printFull writes the report of a rebuild (see docs/verifier.md, "verify full").
func printFull(w io.Writer, res *fullResult, opts fullOptions) {
	fmt.Fprintf(w, "project:      %s\n", res.Project)
	fmt.Fprintf(w, "stream:       %s\n", res.Stream)
	if res.Break != nil {
		fmt.Fprintf(w, "events:       %d rebuilt before the break\n", res.Size)
		fmt.Fprintf(w, "TAMPERED: %s\n", oneLine(res.Break.Error()))
		return
	}
	fmt.Fprintf(w, "events:       %d rebuilt\n", res.Stats.Events)
	fmt.Fprintf(w, "commitments:  %d re-derived, %d shredded (leaf checked, commitment not re-derivable)\n",
		res.Stats.Rederived, res.Stats.Shredded)
	if len(opts.keys) > 0 {
		fmt.Fprintf(w, "signatures:   %d checked against %d key(s)\n", res.Stats.Signatures, len(opts.keys))
	} else {
		fmt.Fprintf(w, "signatures:   not checked (no --signing-key); %d events carry one\n", res.Signed)
	}
	printShredded(w, res.Shredded)
	fmt.Fprintf(w, "tree size:    %d\n", res.Size)
	fmt.Fprintf(w, "root:         %s\n", tlog.Hex(res.Root))
	switch {
	case opts.hasSize && opts.hasRoot:
		fmt.Fprintf(w, "trusted root: matches at size %d\n", opts.size)
	case opts.hasSize:
		fmt.Fprintf(w, "root at size: %d %s (no --root given: compare it with a root you trust)\n", opts.size, tlog.Hex(res.SizeRoot))
	case opts.hasRoot:
		fmt.Fprintf(w, "trusted root: matches at size %d\n", res.Size)
	default:
		fmt.Fprintf(w, "trusted root: none given (--root); compare the root above with one you trust\n")
	}
	if res.AuditErr != nil {
		fmt.Fprintf(w, "TAMPERED: %s\n", oneLine(res.AuditErr.Error()))
		return
	}
	fmt.Fprintf(w, "OK: %d events rebuild to size %d, root %s\n", res.Stats.Events, res.Size, tlog.Hex(res.Root))
}
