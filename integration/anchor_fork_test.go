package integration

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sealtrail/sealtrail/client"
	"github.com/sealtrail/sealtrail/tlog"
)

// TestAnchorFork forks the service after an anchor, by editing storage: the stream's
// committed root of the anchored size is replaced, so the service now signs another
// tree of that size. The anchor still verifies (it is what was published), and the
// fork is caught by `sealtrail verify consistency` from the anchored head to the head
// the service shows, and by the Go client as inconsistent_tree.
func TestAnchorFork(t *testing.T) {
	dir := t.TempDir()
	pub, w, anchorEnv := anchoringSetup(t, dir)
	env := []string{anchorEnv}
	s := startServer(t, serveOpts{dir: dir, env: env})
	p := s.newProject("forked")
	for range 3 {
		s.mustLog(p.key["log:write"], "before.fork")
	}
	var page struct {
		Heads []client.AttestedHead `json:"heads"`
	}
	if err := json.Unmarshal([]byte(waitAnchored(t, s, p.all, 3)), &page); err != nil {
		t.Fatal(err)
	}
	anchored := page.Heads[0]
	s.stop()

	// The fork: another root for the committed size 3.
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "data", "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	forged := tlog.LeafHash([]byte("forged"))
	res, err := db.Exec(`UPDATE checkpoints SET root = ? WHERE log = (SELECT id FROM logs WHERE project_id = ? AND stream = 'events')`, forged[:], p.id)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("fork the catalog: %v", err)
	}
	db.Close()

	s = startServer(t, serveOpts{dir: dir, env: env})
	shown := s.sth(p.all, "events")
	if shown.TreeSize != 3 || shown.RootHash != tlog.Hex(forged) {
		t.Fatalf("the forked service shows %+v", shown)
	}
	file := filepath.Join(t.TempDir(), "anchors.json")
	raw, _ := json.Marshal(map[string]any{"stream": "events", "heads": []client.AttestedHead{anchored}})
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := sealtrailBin(t)
	key := hex.EncodeToString(pub)
	if r := runBin(t, bin, dir, "verify", "anchor", "--anchor", file, "--service-key", key, "--witness-key", w.VerifierKey); r.code != 0 {
		t.Fatalf("the published anchor no longer verifies: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	size := strconv.FormatUint(shown.TreeSize, 10)
	if r := runBin(t, bin, dir, "verify", "consistency", "--old-size", strconv.FormatUint(anchored.TreeSize, 10), "--old-root", anchored.RootHash,
		"--new-size", size, "--new-root", shown.RootHash); r.code != 1 {
		t.Fatalf("verify consistency from the anchored head to the forked one: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	cl, err := client.New(client.Config{APIKey: p.all, BaseURL: s.base, AutoVerify: new(false), ServicePublicKey: key,
		WitnessKeys: []string{w.VerifierKey}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = cl.VerifyAnchor(context.Background(), client.StreamEvents, &anchored)
	var te *client.TamperError
	if !errors.As(err, &te) || te.Reason != client.ReasonInconsistentTree {
		t.Fatalf("client VerifyAnchor on the forked service: %v, want inconsistent_tree", err)
	}
	s.stop()
}
