package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/tlog"
)

// loadManifest reads the committed fixtures' manifest.
func loadManifest(t *testing.T) manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(fixtureDir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func fixture(name string) string { return filepath.Join(fixtureDir, name) }

// sampleExportLines returns the committed sample export's lines.
func sampleExportLines(t *testing.T) [][]byte {
	t.Helper()
	data, err := os.ReadFile(fixture("sample.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
}

func TestCLIGeneral(t *testing.T) {
	t.Parallel()
	expect(t, sealtrail(t, nil), exitUsage, "no command given")
	expect(t, sealtrail(t, nil, "frobnicate"), exitUsage, `unknown command "frobnicate"`)
	expect(t, sealtrail(t, nil, "verify"), exitUsage, `unknown command "verify"`)
	expect(t, sealtrail(t, nil, "verify", "everything"), exitUsage, `unknown command "verify everything"; verify takes full`)
	expect(t, sealtrail(t, nil, "frobnicate", "--now"), exitUsage, `unknown command "frobnicate"; run 'sealtrail help'`)
	for _, h := range []string{"help", "--help", "-h"} {
		r := sealtrail(t, nil, h)
		expect(t, r, exitOK, "keygen", "verify full", "verify inclusion", "verify consistency", "verify sth", "selfcheck", "Exit status")
	}
	expect(t, sealtrail(t, nil, "verify", "full", "--help"), exitOK, "--export", "--signing-key")
	expect(t, sealtrail(t, nil, "verify", "sth", "-h"), exitOK, "--service-key")
}

func TestCLIKeygen(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`(?m)^private key: ([0-9a-f]{64})\npublic key:  ([0-9a-f]{64})$`)
	seen := map[string]bool{}
	for range 2 {
		r := sealtrail(t, nil, "keygen")
		expect(t, r, exitOK)
		m := re.FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("keygen output is not labeled private/public hex\n%s", r)
		}
		seed, _ := hex.DecodeString(m[1])
		pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
		if hex.EncodeToString(pub) != m[2] {
			t.Fatalf("public key %s does not belong to the private key", m[2])
		}
		if seen[m[1]] {
			t.Fatal("keygen printed the same key twice")
		}
		seen[m[1]] = true
	}
	expect(t, sealtrail(t, nil, "keygen", "extra"), exitUsage, `unexpected argument "extra"`)
	expect(t, sealtrail(t, nil, "keygen", "--bits", "256"), exitUsage, "flag provided but not defined: -bits")
}

func TestCLIVerifyFullFixtures(t *testing.T) {
	t.Parallel()
	m := loadManifest(t)
	args := func(file string, extra ...string) []string {
		return append(append([]string{"verify", "full", "--export", fixture(file)}, extra...), m.VerifyArgs...)
	}
	r := sealtrail(t, nil, args(m.Export)...)
	expect(t, r, m.Exit, "project:      prj_sample\n", "stream:       events\n", "events:       300 rebuilt\n",
		"commitments:  184 re-derived, 116 shredded", "signatures:   140 checked", "tree size:    300\n",
		"root:         "+m.Root+"\n", "trusted root: matches at size 300\n", "OK: 300 events")
	if !strings.HasPrefix(lastLine(r.stdout), "OK: ") || r.stderr != "" {
		t.Fatalf("want an OK line last and nothing on stderr\n%s", r)
	}
	for _, tc := range m.Tampered {
		t.Run(tc.File, func(t *testing.T) {
			t.Parallel()
			r := sealtrail(t, nil, args(tc.File)...)
			want := fmt.Sprintf("%s at sequence %d", tc.Reason, tc.Sequence)
			expect(t, r, tc.Exit, "tamper detected: "+want)
			if !strings.HasPrefix(lastLine(r.stdout), "TAMPERED: "+want) {
				t.Fatalf("stdout does not end with the TAMPERED line\n%s", r)
			}
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestCLIVerifyFullTrust(t *testing.T) {
	t.Parallel()
	m := loadManifest(t)
	lines := sampleExportLines(t)
	tree, _, err := memoryTree(lines)
	if err != nil {
		t.Fatal(err)
	}
	root120, err := tree.Root(120)
	if err != nil {
		t.Fatal(err)
	}
	sample := fixture("sample.ndjson")
	other := hex.EncodeToString(selfcheckConfig.customerKey().Public().(ed25519.PublicKey))
	full := func(extra ...string) []string {
		return append([]string{"verify", "full", "--export", sample}, extra...)
	}

	// No trusted input at all: the rebuild is internally consistent.
	expect(t, sealtrail(t, nil, full()...), exitOK, "signatures:   not checked (no --signing-key); 140 events carry one",
		"trusted root: none given")
	// Only the trusted root catches a consistently rewritten line...
	expect(t, sealtrail(t, nil, "verify", "full", "--export", fixture("tampered-root.ndjson")), exitOK)
	// ...and without --signing-key a re-signed line shows up only as a root mismatch.
	expect(t, sealtrail(t, nil, "verify", "full", "--export", fixture("tampered-signature.ndjson"), "--root", m.Root),
		exitTamper, "root_mismatch at sequence 300")
	// --root alone compares at the export's length.
	expect(t, sealtrail(t, nil, full("--root", m.Root)...), exitOK, "trusted root: matches at size 300")
	// --size below the export's length compares there and still rebuilds the rest.
	expect(t, sealtrail(t, nil, full("--size", "120", "--root", tlog.Hex(root120))...), exitOK,
		"trusted root: matches at size 120", "tree size:    300", "root:         "+m.Root)
	expect(t, sealtrail(t, nil, full("--size", "120", "--root", m.Root)...), exitTamper, "root_mismatch at sequence 120")
	expect(t, sealtrail(t, nil, full("--size", "120")...), exitOK, "root at size: 120 "+tlog.Hex(root120))
	// A trusted size beyond the export: rows are missing at the end.
	expect(t, sealtrail(t, nil, full("--size", "301")...), exitTamper, "sequence_gap at sequence 301")
	expect(t, sealtrail(t, nil, full("--size", "301", "--root", m.Root)...), exitTamper, "sequence_gap at sequence 301")
	// Several signing keys: repeated or comma-separated; valid under any.
	expect(t, sealtrail(t, nil, full("--signing-key", other, "--signing-key", m.SigningPublicKey)...), exitOK, "140 checked against 2 key(s)")
	expect(t, sealtrail(t, nil, full("--signing-key", other+","+m.SigningPublicKey)...), exitOK, "140 checked against 2 key(s)")
	expect(t, sealtrail(t, nil, full("--signing-key", other)...), exitTamper, "invalid_client_signature at sequence 81")
	// The export on stdin.
	data, err := os.ReadFile(sample)
	if err != nil {
		t.Fatal(err)
	}
	expect(t, sealtrail(t, bytes.NewReader(data), "verify", "full", "--export", "-", "--root", m.Root), exitOK, "OK: 300 events")
	// A partial range fails the sequence check.
	partial := writeFile(t, "partial.ndjson", joinLines(lines[1:]))
	expect(t, sealtrail(t, nil, "verify", "full", "--export", partial), exitTamper, "sequence_gap at sequence 1")
}

func TestCLIVerifyFullInputErrors(t *testing.T) {
	t.Parallel()
	m := loadManifest(t)
	lines := sampleExportLines(t)
	sample := fixture("sample.ndjson")
	withLine := func(i int, line string) string {
		ls := append([][]byte{}, lines[:10]...)
		ls[i] = []byte(line)
		return writeFile(t, "bad.ndjson", joinLines(ls))
	}
	other := func(edit func(c *sampleConfig)) []byte {
		c := fixtureConfig
		edit(&c)
		ls, _, _, err := sampleLines(&c)
		if err != nil {
			t.Fatal(err)
		}
		return ls[5]
	}
	mixedProject := writeFile(t, "mixed.ndjson", joinLines(append(append([][]byte{}, lines[:5]...),
		other(func(c *sampleConfig) { c.ProjectID = "prj_other" }))))
	mixedStream := writeFile(t, "mixed.ndjson", joinLines(append(append([][]byte{}, lines[:5]...),
		other(func(c *sampleConfig) { c.Stream = tlog.StreamProjectAudit }))))
	var rec map[string]any
	if err := json.Unmarshal(lines[3], &rec); err != nil {
		t.Fatal(err)
	}
	rec["leafHash"] = strings.ToUpper(rec["leafHash"].(string))
	upper, _ := json.Marshal(rec)

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"missing --export", []string{}, "verify full: --export is required"},
		{"unknown flag", []string{"--export", sample, "--trust-me"}, "flag provided but not defined: -trust-me"},
		{"positional", []string{"--export", sample, "extra"}, `unexpected argument "extra"`},
		{"malformed root", []string{"--export", sample, "--root", "zz"}, `invalid value "zz" for flag -root`},
		{"upper-case root", []string{"--export", sample, "--root", strings.ToUpper(m.Root)}, "not lowercase hex"},
		{"short root", []string{"--export", sample, "--root", m.Root[:62]}, "want 64 hex digits, got 62"},
		{"upper-case key", []string{"--export", sample, "--signing-key", strings.ToUpper(m.SigningPublicKey)}, "not lowercase hex"},
		{"bad size", []string{"--export", sample, "--size", "-3"}, `invalid value "-3" for flag -size`},
		{"zero size", []string{"--export", sample, "--size", "0"}, "--size must be at least 1"},
		{"nonexistent file", []string{"--export", filepath.Join(t.TempDir(), "nope.ndjson")}, "no such file or directory"},
		{"directory", []string{"--export", t.TempDir()}, "is a directory"},
		{"empty export", []string{"--export", writeFile(t, "empty.ndjson", nil)}, "export is empty"},
		{"non-JSON line", []string{"--export", withLine(2, "this is not json")}, "line 3: malformed export line"},
		{"truncated line", []string{"--export", withLine(4, string(lines[4][:len(lines[4])/2]))}, "line 5: malformed export line"},
		{"blank line", []string{"--export", withLine(6, "")}, "line 7: malformed export line"},
		{"JSON array line", []string{"--export", withLine(1, "[1,2,3]")}, "line 2: malformed export line"},
		{"upper-case hex in a line", []string{"--export", withLine(3, string(upper))}, "line 4: malformed export line"},
		{"unknown member", []string{"--export", withLine(0, strings.Replace(string(lines[0]), "{", `{"note":"x",`, 1))}, `unknown member "note"`},
		{"mixed projects", []string{"--export", mixedProject}, "line 6: records of more than one project-stream"},
		{"mixed streams", []string{"--export", mixedStream}, "line 6: records of more than one project-stream"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := sealtrail(t, nil, append([]string{"verify", "full"}, tc.args...)...)
			expect(t, r, exitUsage, tc.want)
			if r.stdout != "" {
				t.Fatalf("input error printed a report\n%s", r)
			}
		})
	}
}

func TestCLIVerifyInclusion(t *testing.T) {
	t.Parallel()
	tree, leaves, err := memoryTree(sampleExportLines(t))
	if err != nil {
		t.Fatal(err)
	}
	const index, size = 150, 300
	root, err := tree.Root(size)
	if err != nil {
		t.Fatal(err)
	}
	p, err := tlog.ProveInclusion(index, size, tree)
	if err != nil {
		t.Fatal(err)
	}
	proof := hexList(p)
	forged := append([]tlog.Hash{}, p...)
	forged[2][7] ^= 0x10
	incl := func(leaf tlog.Hash, index, size string, root tlog.Hash, proof string) []string {
		return []string{"verify", "inclusion", "--leaf-hash", tlog.Hex(leaf), "--index", index, "--size", size, "--root", tlog.Hex(root), "--proof", proof}
	}
	expect(t, sealtrail(t, nil, incl(leaves[index], "150", "300", root, proof)...), exitOK, "OK: leaf 150 is included in the tree of size 300")
	// A tree of one leaf: its root is the leaf hash, its proof empty.
	expect(t, sealtrail(t, nil, incl(leaves[0], "0", "1", leaves[0], "")...), exitOK, "OK: leaf 0")
	for name, args := range map[string][]string{
		"wrong leaf":       incl(leaves[index+1], "150", "300", root, proof),
		"wrong index":      incl(leaves[index], "151", "300", root, proof),
		"wrong root":       incl(leaves[index], "150", "300", leaves[0], proof),
		"forged element":   incl(leaves[index], "150", "300", root, hexList(forged)),
		"extra element":    incl(leaves[index], "150", "300", root, proof+","+tlog.Hex(root)),
		"missing element":  incl(leaves[index], "150", "300", root, hexList(p[1:])),
		"empty proof, big": incl(leaves[index], "150", "300", root, ""),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := sealtrail(t, nil, args...)
			expect(t, r, exitTamper, "verify inclusion: tamper detected: inclusion proof")
			if !strings.HasPrefix(lastLine(r.stdout), "TAMPERED: ") {
				t.Fatalf("stdout does not end with TAMPERED\n%s", r)
			}
		})
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"index not below size": {incl(leaves[index], "300", "300", root, proof), "--index 300 is not below --size 300"},
		"zero size":            {incl(leaves[index], "0", "0", root, proof), "--size must be at least 1"},
		"negative index":       {incl(leaves[index], "-1", "300", root, proof), `invalid value "-1" for flag -index`},
		"malformed proof":      {incl(leaves[index], "150", "300", root, proof+",xyz"), "proof element 10"},
		"upper-case proof":     {incl(leaves[index], "150", "300", root, strings.ToUpper(proof)), "not lowercase hex"},
		"upper-case leaf":      {[]string{"verify", "inclusion", "--leaf-hash", strings.ToUpper(tlog.Hex(leaves[0])), "--index", "0", "--size", "1", "--root", tlog.Hex(root), "--proof", ""}, "not lowercase hex"},
		"missing proof":        {incl(leaves[index], "150", "300", root, proof)[:10], "--proof is required"},
		"missing leaf hash":    {[]string{"verify", "inclusion", "--index", "1"}, "--leaf-hash is required"},
		"unknown flag":         {append(incl(leaves[index], "150", "300", root, proof), "--tree", "x"), "flag provided but not defined: -tree"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			expect(t, sealtrail(t, nil, tc.args...), exitUsage, "sealtrail: verify inclusion: ", tc.want)
		})
	}
}

func hexList(hs []tlog.Hash) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = tlog.Hex(h)
	}
	return strings.Join(parts, ",")
}
