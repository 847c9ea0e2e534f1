package integration

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/client"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tlog"
)

var (
	verifierOnce sync.Once
	verifierBin  string
	verifierErr  error
)

// sealtrailBin builds the offline verifier once per test binary.
func sealtrailBin(t *testing.T) string {
	t.Helper()
	verifierOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sealtrail-cli-")
		if err != nil {
			verifierErr = err
			return
		}
		verifierBin = filepath.Join(dir, "sealtrail")
		out, err := exec.Command("go", "build", "-o", verifierBin, "github.com/sealtrail/sealtrail/cmd/sealtrail").CombinedOutput()
		if err != nil {
			verifierErr = fmt.Errorf("build sealtrail: %v\n%s", err, out)
		}
	})
	if verifierErr != nil {
		t.Fatal(verifierErr)
	}
	return verifierBin
}

// TestAnchoring runs the service with a short anchoring interval and a real
// omniwitness: /anchors fills in, the tree_heads key is discoverable without an API
// key, and `sealtrail verify anchor` passes on what the service produced and fails
// with exit 1 on each edited link (stream head, inclusion proof, tree_heads
// checkpoint, cosignature).
func TestAnchoring(t *testing.T) {
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		dir := t.TempDir()
		pub, w, anchorEnv := anchoringSetup(t, dir)
		thOrigin := tlog.TreeHeadsOrigin(origin)
		thKey, _ := tlog.CheckpointVerifierKey(pub, thOrigin)
		s := startServer(t, serveOpts{dir: dir, env: c.env(anchorEnv)})

		// Discovery, without an API key.
		r := call(t, http.MethodGet, s.base+"/api/v1/checkpoint-key", "", nil)
		th, _ := r.body["treeHeads"].(map[string]any)
		if r.status != http.StatusOK || th["verifierKey"] != thKey || th["origin"] != thOrigin {
			t.Fatalf("GET /checkpoint-key: %d %s, want tree_heads key %s", r.status, r.raw, thKey)
		}
		wantError(t, "checkpoint-key of a bad project id", call(t, http.MethodGet, s.base+"/api/v1/checkpoint-key?projectId=a+b", "", nil), http.StatusBadRequest, "")
		if out := s.mustCLI("ops", "checkpoint-key", "show"); out["treeHeads"].(map[string]any)["verifierKey"] != thKey {
			t.Fatalf("admin checkpoint-key show: %v", out)
		}

		p := s.newProject("anchored")
		for i := range 3 {
			s.mustLog(p.key["log:write"], fmt.Sprintf("anchored.%d", i))
		}
		page := waitAnchored(t, s, p.all, 3)
		file := filepath.Join(t.TempDir(), "anchors.json")
		if err := os.WriteFile(file, []byte(page), 0o600); err != nil {
			t.Fatal(err)
		}
		bin := sealtrailBin(t)
		args := []string{"verify", "anchor", "--anchor", file, "--service-key", hex.EncodeToString(pub), "--witness-key", w.VerifierKey}
		if res := runBin(t, bin, dir, args...); res.code != 0 || !strings.Contains(res.stdout, "OK:") {
			t.Fatalf("verify anchor on the service's /anchors: exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		// Without the witness's key nothing outside the service is checked: exit 2.
		if res := runBin(t, bin, dir, "verify", "anchor", "--anchor", file); res.code != 2 {
			t.Fatalf("verify anchor without trust: exit %d, want 2\n%s", res.code, res.stderr)
		}

		var doc map[string]any
		if err := json.Unmarshal([]byte(page), &doc); err != nil {
			t.Fatal(err)
		}
		edits := []struct {
			link string
			edit func(h, proof map[string]any)
		}{
			{"stream head", func(h, _ map[string]any) { h["rootHash"] = flipHex(h["rootHash"].(string)) }},
			{"stream head size", func(h, _ map[string]any) { h["treeSize"] = h["treeSize"].(float64) + 1 }},
			{"inclusion proof", func(_, p map[string]any) {
				inc := p["inclusion"].([]any)
				inc[0] = flipHex(inc[0].(string))
			}},
			{"tree_heads checkpoint", func(_, p map[string]any) {
				lines := strings.SplitN(p["checkpoint"].(string), "\n", 3)
				lines[1] = lines[1] + "0" // another size
				p["checkpoint"] = strings.Join(lines, "\n")
			}},
			{"cosignature", func(_, p map[string]any) {
				w := p["external"].([]any)[0].(map[string]any)["proof"].(map[string]any)
				cs := w["cosignatures"].([]any)
				line := cs[0].(string)
				i := len(line) - 10
				b := []byte(line)
				b[i] = map[bool]byte{true: 'B', false: 'A'}[b[i] == 'A']
				cs[0] = string(b)
			}},
		}
		for _, ed := range edits {
			var cp map[string]any
			raw, _ := json.Marshal(doc)
			_ = json.Unmarshal(raw, &cp)
			h := cp["heads"].([]any)[0].(map[string]any)
			ed.edit(h, h["anchorProof"].(map[string]any))
			edited, _ := json.Marshal(cp)
			f := filepath.Join(t.TempDir(), "edited.json")
			if err := os.WriteFile(f, edited, 0o600); err != nil {
				t.Fatal(err)
			}
			args := []string{"verify", "anchor", "--anchor", f, "--service-key", hex.EncodeToString(pub), "--witness-key", w.VerifierKey}
			if res := runBin(t, bin, dir, args...); res.code != 1 || !strings.Contains(res.stderr, "tamper detected") {
				t.Errorf("edited %s: exit %d, want 1\n%s%s", ed.link, res.code, res.stdout, res.stderr)
			}
		}

		// The stream grows: a new head is appended and anchored, the old one keeps its
		// anchor.
		s.mustLog(p.key["log:write"], "anchored.3")
		page = waitAnchored(t, s, p.all, 4)
		if err := os.WriteFile(file, []byte(page), 0o600); err != nil {
			t.Fatal(err)
		}
		if res := runBin(t, bin, dir, args...); res.code != 0 || strings.Count(res.stdout, "verified\n")+strings.Count(res.stdout, "verified,") < 2 {
			t.Fatalf("verify anchor after growth: exit %d\n%s%s", res.code, res.stdout, res.stderr)
		}
		// The Go client checks the anchored heads against its own pins.
		cl, err := client.New(client.Config{APIKey: p.all, BaseURL: s.base, AutoVerify: new(false),
			ServicePublicKey: hex.EncodeToString(pub), ProjectID: p.id, WitnessKeys: []string{w.VerifierKey}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		page2, err := cl.GetAnchors(ctx, client.StreamEvents, 0)
		if err != nil || len(page2.Heads) < 2 {
			t.Fatalf("GetAnchors: %+v, %v", page2, err)
		}
		for i := range page2.Heads[:2] {
			va, err := cl.VerifyAnchor(ctx, client.StreamEvents, &page2.Heads[i])
			if err != nil || va.AnchoredAt.IsZero() || va.Pinned.TreeSize < va.Head.TreeSize {
				t.Fatalf("client VerifyAnchor of head %d: %+v, %v", i, va, err)
			}
		}
		s.stop()
	})
}

// anchoringSetup makes the service key in dir/data before the service starts, so that
// an omniwitness can know the tree_heads log, starts that witness, and returns the
// key, the witness and the SEALTRAIL_ANCHOR setting (300 ms interval) naming it.
func anchoringSetup(t *testing.T, dir string) (ed25519.PublicKey, testenv.Witness, string) {
	t.Helper()
	pub, priv, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data", "service.key"), []byte(hex.EncodeToString(priv.Seed())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	thKey, err := tlog.CheckpointVerifierKey(pub, tlog.TreeHeadsOrigin(origin))
	if err != nil {
		t.Fatal(err)
	}
	w := testenv.Omniwitness(t, testenv.WitnessedLog{Origin: tlog.TreeHeadsOrigin(origin), VerifierKey: thKey})
	cfg, _ := json.Marshal(map[string]any{"intervalMs": 300, "witnesses": []map[string]string{{"url": w.URL, "key": w.VerifierKey}}})
	return pub, w, "SEALTRAIL_ANCHOR=" + string(cfg)
}

// waitAnchored waits until the newest head of the events stream has size want and an
// anchor, and returns the /anchors response.
func waitAnchored(t *testing.T, s *server, token string, want float64) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		r := s.mustGet(token, "/anchors")
		heads, _ := r.body["heads"].([]any)
		if len(heads) > 0 {
			h := heads[0].(map[string]any)
			if h["treeSize"] == want && h["anchorType"] == "witness" && h["anchorProof"] != nil && h["anchoredAt"] != nil {
				return r.raw
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no anchored head of size %v within 60 s: %s", want, r.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// flipHex changes the first hex digit of s.
func flipHex(s string) string {
	if s[0] == '0' {
		return "1" + s[1:]
	}
	return "0" + s[1:]
}
