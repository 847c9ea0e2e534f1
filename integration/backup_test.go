package integration

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sealtrail/sealtrail/client"
)

// TestRestoreOlderPointIsTreeShrunk follows docs/backup.md: a backup taken with the
// service stopped (catalog and store together), more events, a restore of that backup.
// A client that pinned a head after the backup reports tree_shrunk: the restored log
// is an older point, and the design makes that visible rather than hiding it. fsck
// passes on the restored deployment; a client that re-pins (the operator's honest
// recovery, announced to its users) sees the restored log grow again.
func TestRestoreOlderPointIsTreeShrunk(t *testing.T) {
	ctx := context.Background()
	dir, addr := t.TempDir(), freeAddr(t)
	s := startAt(t, dir, addr)
	p := s.newProject("backup")
	for range 3 {
		s.mustLog(p.all, "user.login")
	}
	key := hex.EncodeToString(s.pub)
	s.stop()
	data := filepath.Join(dir, "data")
	backup := filepath.Join(t.TempDir(), "backup")
	if out, err := exec.Command("cp", "-a", data, backup).CombinedOutput(); err != nil {
		t.Fatalf("backup: %v %s", err, out)
	}

	s = startAt(t, dir, addr)
	for range 2 {
		s.mustLog(p.all, "user.logout")
	}
	c, err := client.New(client.Config{APIKey: p.all, BaseURL: s.base, ServicePublicKey: key, AutoVerify: boolPtr(false)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if h, err := c.CheckConsistency(ctx, client.StreamEvents); err != nil || h.TreeSize != 5 {
		t.Fatalf("pin before the restore: %v %v", h, err)
	}
	s.stop()

	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", backup, data).CombinedOutput(); err != nil {
		t.Fatalf("restore: %v %s", err, out)
	}
	if r := runCLI(t, dir, "fsck"); r.code != 0 {
		t.Fatalf("fsck after the restore: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s = startAt(t, dir, addr)
	_, err = c.CheckConsistency(ctx, client.StreamEvents)
	var te *client.TamperError
	if !errors.As(err, &te) || te.Reason != client.ReasonTreeShrunk {
		t.Fatalf("after restoring an older point: %v, want tree_shrunk", err)
	}

	// Recovery: a client re-pins (a new head store) once the operator has told its
	// users; the restored log takes new events and proves its growth.
	fresh, err := client.New(client.Config{APIKey: p.all, BaseURL: s.base, ServicePublicKey: key, AutoVerify: boolPtr(false)})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if h, err := fresh.CheckConsistency(ctx, client.StreamEvents); err != nil || h.TreeSize != 3 {
		t.Fatalf("re-pin after the restore: %v %v", h, err)
	}
	s.mustLog(p.all, "user.login")
	if h, err := fresh.CheckConsistency(ctx, client.StreamEvents); err != nil || h.TreeSize != 4 {
		t.Fatalf("growth after the restore: %v %v", h, err)
	}
	s.stop()
}
