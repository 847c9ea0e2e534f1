package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

func TestCLIVerifyConsistency(t *testing.T) {
	t.Parallel()
	tree, _, err := memoryTree(sampleExportLines(t))
	if err != nil {
		t.Fatal(err)
	}
	root := func(n uint64) tlog.Hash {
		h, err := tree.Root(n)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	p, err := tlog.ProveConsistency(100, 300, tree)
	if err != nil {
		t.Fatal(err)
	}
	forged := append([]tlog.Hash{}, p...)
	forged[len(forged)-1][0] ^= 1
	cons := func(oldSize uint64, oldRoot tlog.Hash, newSize uint64, newRoot tlog.Hash, proof ...string) []string {
		args := []string{"verify", "consistency", "--old-size", strconv.FormatUint(oldSize, 10), "--old-root", tlog.Hex(oldRoot),
			"--new-size", strconv.FormatUint(newSize, 10), "--new-root", tlog.Hex(newRoot)}
		if len(proof) > 0 {
			args = append(args, "--proof", proof[0])
		}
		return args
	}
	for name, args := range map[string][]string{
		"100 to 300":           cons(100, root(100), 300, root(300), hexList(p)),
		"equal sizes":          cons(300, root(300), 300, root(300)),
		"equal, empty --proof": cons(300, root(300), 300, root(300), ""),
		"from the empty tree":  cons(0, tlog.EmptyRoot, 300, root(300)),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			expect(t, sealtrail(t, nil, args...), exitOK, "OK: the tree of size")
		})
	}
	for name, args := range map[string][]string{
		"wrong old root":         cons(100, root(99), 300, root(300), hexList(p)),
		"wrong new root":         cons(100, root(100), 300, root(299), hexList(p)),
		"forged element":         cons(100, root(100), 300, root(300), hexList(forged)),
		"truncated proof":        cons(100, root(100), 300, root(300), hexList(p[:len(p)-1])),
		"no proof":               cons(100, root(100), 300, root(300)),
		"equal sizes, two roots": cons(300, root(300), 300, root(299)),
		"empty tree, a root":     cons(0, root(1), 300, root(300)),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := sealtrail(t, nil, args...)
			expect(t, r, exitTamper, "verify consistency: tamper detected: consistency proof")
			if !strings.HasPrefix(lastLine(r.stdout), "TAMPERED: ") {
				t.Fatalf("stdout does not end with TAMPERED\n%s", r)
			}
		})
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"old above new":   {cons(300, root(300), 100, root(100)), "--old-size 300 is larger than --new-size 100"},
		"missing newroot": {cons(100, root(100), 300, root(300))[:8], "--new-root is required"},
		"malformed root":  {append(cons(100, root(100), 300, root(300)), "--old-root", "0x12"), `invalid value "0x12" for flag -old-root`},
		"upper-case root": {append(cons(100, root(100), 300, root(300)), "--new-root", strings.ToUpper(tlog.Hex(root(300)))), "not lowercase hex"},
		"malformed proof": {cons(100, root(100), 300, root(300), "abc"), "proof element 1"},
		"proof twice":     {append(cons(100, root(100), 300, root(300), hexList(p)), "--proof", hexList(p)), "given more than once"},
		"bad size":        {[]string{"verify", "consistency", "--old-size", "ten"}, `invalid value "ten" for flag -old-size`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			expect(t, sealtrail(t, nil, tc.args...), exitUsage, "sealtrail: verify consistency: ", tc.want)
		})
	}
}

func TestCLIVerifySTH(t *testing.T) {
	t.Parallel()
	m := loadManifest(t)
	rootJSON, err := os.ReadFile(fixture(m.RootResponse))
	if err != nil {
		t.Fatal(err)
	}
	var resp rootResponse
	if err := json.Unmarshal(rootJSON, &resp); err != nil {
		t.Fatal(err)
	}
	bare, err := json.Marshal(resp.STH)
	if err != nil {
		t.Fatal(err)
	}
	edited := bytes.Replace(bare, []byte(`"treeSize":300`), []byte(`"treeSize":299`), 1)
	otherKey := hex.EncodeToString(selfcheckConfig.serviceKey().Public().(ed25519.PublicKey))
	file := func(name string, data []byte) string { return writeFile(t, name, data) }
	sth := func(path, key string) []string { return []string{"verify", "sth", "--sth", path, "--service-key", key} }

	expect(t, sealtrail(t, nil, sth(fixture(m.RootResponse), m.ServicePublicKey)...), exitOK,
		"project:      prj_sample", "tree size:    300", "root:         "+m.Root, "OK: tree head signed by service key "+m.ServicePublicKey)
	expect(t, sealtrail(t, nil, sth(file("sth.json", bare), m.ServicePublicKey)...), exitOK, "OK: tree head signed")

	for name, args := range map[string][]string{
		"edited tree size":    sth(file("sth.json", edited), m.ServicePublicKey),
		"bare STH, other key": sth(file("sth.json", bare), otherKey),
		"response, other key": sth(fixture(m.RootResponse), otherKey),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := sealtrail(t, nil, args...)
			expect(t, r, exitTamper, "verify sth: tamper detected: ")
			if !strings.HasPrefix(lastLine(r.stdout), "TAMPERED: ") {
				t.Fatalf("stdout does not end with TAMPERED\n%s", r)
			}
		})
	}
	expect(t, sealtrail(t, nil, sth(fixture(m.RootResponse), otherKey)...), exitTamper, "service_key_changed")
	expect(t, sealtrail(t, nil, sth(file("sth.json", edited), m.ServicePublicKey)...), exitTamper, "bad_sth_signature")

	replace := func(old, new string) []byte { return bytes.Replace(bare, []byte(old), []byte(new), 1) }
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"not JSON":          {sth(file("x.json", []byte("sth please")), m.ServicePublicKey), "not a JSON tree head"},
		"JSON array":        {sth(file("x.json", []byte("[]")), m.ServicePublicKey), "not a JSON object"},
		"duplicate member":  {sth(file("x.json", replace(`{"v":1,`, `{"v":1,"v":1,`)), m.ServicePublicKey), "duplicate object key"},
		"unknown member":    {sth(file("x.json", replace(`{"v":1,`, `{"v":1,"note":"x",`)), m.ServicePublicKey), `unknown member "note"`},
		"missing member":    {sth(file("x.json", replace(`"v":1,`, ``)), m.ServicePublicKey), `missing member "v"`},
		"version 2":         {sth(file("x.json", replace(`"v":1,`, `"v":2,`)), m.ServicePublicKey), "tree head version 2"},
		"upper-case root":   {sth(file("x.json", replace(m.Root, strings.ToUpper(m.Root))), m.ServicePublicKey), "not lowercase hex"},
		"bad signature hex": {sth(file("x.json", replace(`"signature":"`, `"signature":"zz`)), m.ServicePublicKey), "malformed tree head"},
		"response extra":    {sth(file("x.json", bytes.Replace(rootJSON, []byte(`"sth"`), []byte(`"x":1,"sth"`), 1)), m.ServicePublicKey), `/root response: unknown member "x"`},
		"nonexistent":       {sth(filepath.Join(t.TempDir(), "nope.json"), m.ServicePublicKey), "no such file or directory"},
		"directory":         {sth(t.TempDir(), m.ServicePublicKey), "is a directory"},
		"missing key":       {[]string{"verify", "sth", "--sth", fixture(m.RootResponse)}, "--service-key is required"},
		"upper-case key":    {sth(fixture(m.RootResponse), strings.ToUpper(m.ServicePublicKey)), "not lowercase hex"},
		"short key":         {sth(fixture(m.RootResponse), m.ServicePublicKey[:10]), "want 64 hex digits"},
		"unknown flag":      {append(sth(fixture(m.RootResponse), m.ServicePublicKey), "--insecure"), "flag provided but not defined: -insecure"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			expect(t, sealtrail(t, nil, tc.args...), exitUsage, "verify sth: ", tc.want)
		})
	}
}

func TestCLISelfcheck(t *testing.T) {
	t.Parallel()
	r := sealtrail(t, nil, "selfcheck")
	expect(t, r, exitOK, "sequence_gap at sequence 9", "content_tampered at sequence 24", "leaf_mismatch at sequence 12",
		"invalid_client_signature at sequence 20", "root_mismatch at sequence 40", "selfcheck: OK (9 checks)")
	if strings.Contains(r.stdout, "FAIL") {
		t.Fatalf("selfcheck reported a failure\n%s", r)
	}
	expect(t, sealtrail(t, nil, "selfcheck", "now"), exitUsage, `selfcheck: unexpected argument "now"`)
}

// TestProgress checks the throttled progress line: drawn once the interval passed, with
// the file's share read, and erased at the end.
func TestProgress(t *testing.T) {
	path := writeFile(t, "p.ndjson", bytes.Repeat([]byte("x"), 1000))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	p := newProgress(&out, f)
	if _, err := p.Read(make([]byte, 250)); err != nil {
		t.Fatal(err)
	}
	p.update(10)
	if out.Len() != 0 {
		t.Fatalf("progress drawn before the interval: %q", out.String())
	}
	p.last = p.last.Add(-time.Second)
	p.update(20)
	if !strings.Contains(out.String(), "20 events") || !strings.Contains(out.String(), "(25%)") {
		t.Fatalf("progress line %q", out.String())
	}
	p.clear()
	if !strings.HasSuffix(out.String(), "\r\033[K") {
		t.Fatalf("progress line not erased: %q", out.String())
	}
}
