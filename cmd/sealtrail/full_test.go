package main

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/tlog"
)

// FuzzRebuildExport feeds arbitrary exports to the rebuild. It must never panic, and a
// rebuild that succeeds must have rebuilt one leaf per line.
func FuzzRebuildExport(f *testing.F) {
	lines, _, _, err := sampleLines(&selfcheckConfig)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(joinLines(lines))
	f.Add(joinLines(lines[:3]))
	for _, tm := range tampers {
		forged, _, err := applyTamper(&selfcheckConfig, lines, tm, selfcheckTampers[tm.Name])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(joinLines(forged[:25]))
	}
	f.Add([]byte(""))
	f.Add([]byte("\n\n"))
	f.Add([]byte("{}\n"))
	f.Add([]byte(`{"sequence":1e400}` + "\n"))
	f.Add(append(append([]byte{}, lines[0]...), "\r\n"...))
	key := selfcheckConfig.customerKey().Public().(ed25519.PublicKey)
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := rebuildExport(bytes.NewReader(data), fullOptions{keys: []ed25519.PublicKey{key}})
		if err != nil {
			var cb *tlog.ChainBreak
			if errors.As(err, &cb) != (res.Break != nil) {
				t.Fatalf("break %v but result.Break %v", err, res.Break)
			}
			return
		}
		n := uint64(bytes.Count(data, []byte("\n")))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			n++
		}
		if res.Stats.Events != n || res.Size != n {
			t.Fatalf("verified %d events (size %d) from %d lines", res.Stats.Events, res.Size, n)
		}
	})
}

// longLine is an io.Reader of one line of n bytes that never ends in a newline.
type longLine struct{ n int }

func (l *longLine) Read(p []byte) (int, error) {
	if l.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), l.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	l.n -= k
	return k, nil
}

func TestRebuildLineTooLong(t *testing.T) {
	lines, _, _, err := sampleLines(&selfcheckConfig)
	if err != nil {
		t.Fatal(err)
	}
	r := io.MultiReader(bytes.NewReader(joinLines(lines[:3])), &longLine{n: maxLineSize + 1})
	_, err = rebuildExport(r, fullOptions{})
	if err == nil || !strings.Contains(err.Error(), "line 4: longer than") {
		t.Fatalf("got %v, want line 4 too long", err)
	}
}

// TestRebuildBatches crosses batch boundaries (batchLines) with breaks and input errors
// at the edges, where an off-by-one in line numbering would show.
func TestRebuildBatches(t *testing.T) {
	c := selfcheckConfig
	c.Events = 2*batchLines + 3
	c.SignThrough = c.Events
	lines, _, root, err := sampleLines(&c)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rebuildExport(bytes.NewReader(joinLines(lines)), fullOptions{root: root, hasRoot: true})
	if err != nil || res.Size != c.Events || res.Root != root {
		t.Fatalf("rebuild: %v, size %d", err, res.Size)
	}
	for _, at := range []int{batchLines, batchLines + 1, 2 * batchLines} {
		bad := append([][]byte{}, lines...)
		bad[at-1] = []byte("not json")
		if _, err := rebuildExport(bytes.NewReader(joinLines(bad)), fullOptions{}); err == nil ||
			!strings.HasPrefix(err.Error(), "line "+strconv.Itoa(at)+": ") {
			t.Errorf("bad line %d: got %v", at, err)
		}
		gap := append(append([][]byte{}, lines[:at-1]...), lines[at:]...)
		_, err := rebuildExport(bytes.NewReader(joinLines(gap)), fullOptions{})
		var cb *tlog.ChainBreak
		if !errors.As(err, &cb) || cb.Reason != tlog.BreakSequenceGap || cb.Sequence != uint64(at) {
			t.Errorf("line %d deleted: got %v", at, err)
		}
	}
}

// TestSelfcheckFails checks a failing selfcheck says so and exits 1: here the plan asks
// for a forgery the log cannot hold (the root forgery on a signed event).
func TestSelfcheckFails(t *testing.T) {
	plan := map[string]uint64{}
	for k, v := range selfcheckTampers {
		plan[k] = v
	}
	plan["root"] = 20 // signed: the customer signature, not the root, would catch it
	var out bytes.Buffer
	err := selfcheck(&out, &selfcheckConfig, plan)
	if code := exitCode(err); code != exitTamper {
		t.Fatalf("exit %d (%v), want %d", code, err, exitTamper)
	}
	if !strings.Contains(out.String(), "  FAIL root forgery caught") || !strings.Contains(out.String(), "selfcheck: FAILED (1 of 9 checks)") {
		t.Fatalf("report:\n%s", out.String())
	}
}

// TestCRLFExport checks an export with CRLF line ends verifies like the original.
func TestCRLFExport(t *testing.T) {
	lines, _, root, err := sampleLines(&selfcheckConfig)
	if err != nil {
		t.Fatal(err)
	}
	crlf := bytes.ReplaceAll(joinLines(lines), []byte("\n"), []byte("\r\n"))
	res, err := rebuildExport(bytes.NewReader(crlf), fullOptions{root: root, hasRoot: true})
	if err != nil || res.Size != uint64(len(lines)) {
		t.Fatalf("CRLF export: %v", err)
	}
}

// verifierImports are the only non-standard packages cmd/sealtrail may import: tlog
// for every format, and the offline verifiers of the two external anchor types.
var verifierImports = map[string]bool{
	"github.com/sealtrail/sealtrail/tlog":         true,
	"github.com/sealtrail/sealtrail/anchor/rekor": true,
	"github.com/sealtrail/sealtrail/anchor/tsa":   true,
}

// verifierDeps is everything else the verifier may link, through those imports: the
// Merkle and signed-note code tlog and anchor/rekor use, the CMS and RFC 3161 parsers
// anchor/tsa uses, and anchor/tsa's and anchor/rekor's HTTP helper (publishing only).
var verifierDeps = map[string]bool{
	"github.com/sealtrail/sealtrail/cmd/sealtrail":            true,
	"github.com/sealtrail/sealtrail/anchor/internal/peerhttp": true,
	"golang.org/x/mod/sumdb/note":                             true,
	"golang.org/x/mod/sumdb/tlog":                             true,
	"github.com/transparency-dev/merkle":                      true,
	"github.com/transparency-dev/merkle/compact":              true,
	"github.com/transparency-dev/merkle/proof":                true,
	"github.com/transparency-dev/merkle/rfc6962":              true,
	"github.com/digitorus/pkcs7":                              true,
	"github.com/digitorus/timestamp":                          true,
}

// TestImports enforces the verifier's promise to auditors: besides tlog, anchor/rekor
// and anchor/tsa it imports only the standard library, and what it links in all is the
// short list above, so that list and the standard library are all there is to read.
func TestImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if !verifierImports[path] && strings.Contains(first, ".") {
				t.Errorf("%s imports %s: the verifier may import only tlog, anchor/rekor, anchor/tsa and the standard library", name, path)
			}
		}
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/sealtrail/sealtrail/anchor/tsa") {
		t.Fatalf("go list -deps names no anchor/tsa: %q", out)
	}
	for _, dep := range deps {
		if !verifierImports[dep] && !verifierDeps[dep] {
			t.Errorf("the verifier links %s: only the packages listed in TestImports may be linked", dep)
		}
	}
}
