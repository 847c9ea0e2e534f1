package integration

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/fsck"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/storeurl"
	sttlog "github.com/sealtrail/sealtrail/tlog"
)

// fsckDeployment starts a service with env, fills two projects with several batches
// and stops it; it returns the working directory and the first project's id.
func fsckDeployment(t *testing.T, env []string) (dir, project string) {
	t.Helper()
	dir = t.TempDir()
	s := startServer(t, serveOpts{dir: dir, env: env})
	var first string
	for i, name := range []string{"alpha", "beta"} {
		p := s.newProject(name)
		if i == 0 {
			first = p.id
		}
		for j := range 300 { // more than one entry bundle and hash tile of 256
			if j%100 == 0 || j < 3 {
				s.mustLog(p.key["log:write"], "user.login") // separate batches
				continue
			}
			s.mustLog(p.key["log:write"], "file.read")
		}
	}
	s.stop()
	return dir, first
}

// wantFsck runs fsck and requires its exit code and that its output names every want.
func wantFsck(t *testing.T, dir string, env []string, code int, want ...string) cliResult {
	t.Helper()
	r := runBinEnv(t, sealtraild, dir, env, append([]string{"fsck"}, fsckFlags(env)...)...)
	if r.code != code {
		t.Fatalf("fsck exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, tail(r.stderr, 3000))
	}
	for _, w := range want {
		if !strings.Contains(r.stdout, w) {
			t.Fatalf("fsck output lacks %q:\n%s", w, r.stdout)
		}
	}
	return r
}

// fsckFlags are the flags that carry a --sweep through env (FSCK_SWEEP=1).
func fsckFlags(env []string) []string {
	for _, kv := range env {
		if kv == "FSCK_SWEEP=1" {
			return []string{"--sweep"}
		}
	}
	return nil
}

// TestFsckFindsDamage: on a healthy deployment fsck passes, on both catalogs; each
// kind of damage done to the object store is found and named, and undoing it makes
// fsck pass again; an orphan payload object is listed without failing, and --sweep
// deletes it.
func TestFsckFindsDamage(t *testing.T) {
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		env := c.env()
		dir, pid := fsckDeployment(t, env)
		wantFsck(t, dir, env, 0, "0 problems")
		objects := filepath.Join(dir, "data", "objects")
		logDir := filepath.Join(objects, pid, "events")
		payloads, off, bundle := logPayloads(t, filepath.Join(objects, "payload", "*", "*"), pid)
		if len(payloads) == 0 {
			t.Fatalf("no payload segment file holds a batch of %s", pid)
		}

		damage := []struct {
			name, file, kind string
			do               func(path string, data []byte) error
		}{
			{"payload deleted", payloads[len(payloads)-1], "payload_missing", func(p string, _ []byte) error { return os.Remove(p) }},
			{"payload truncated", payloads[0], "payload_corrupt", func(p string, d []byte) error { return os.WriteFile(p, d[:off+len(bundle)/2], 0o600) }},
			{"hash tile altered", filepath.Join(logDir, "tile", "0", "000"), "tile_mismatch", flipLastByte},
			{"hash tile deleted", filepath.Join(logDir, "tile", "1", "000.p", "1"), "tile_missing", func(p string, _ []byte) error { return os.Remove(p) }},
			{"entry bundle altered", filepath.Join(logDir, "tile", "entries", "000"), "bundle_mismatch", flipLastByte},
			{"entry bundle deleted", filepath.Join(logDir, "tile", "entries", "001.p", "44"), "bundle_missing", func(p string, _ []byte) error { return os.Remove(p) }},
			{"checkpoint replaced", filepath.Join(logDir, "checkpoint"), "checkpoint_bad", func(p string, d []byte) error {
				return os.WriteFile(p, bytes.Replace(d, []byte("\n300\n"), []byte("\n299\n"), 1), 0o600)
			}},
			{"checkpoint deleted", filepath.Join(logDir, "checkpoint"), "checkpoint_missing", func(p string, _ []byte) error { return os.Remove(p) }},
		}
		for _, d := range damage {
			orig, err := os.ReadFile(d.file)
			if err != nil {
				t.Fatalf("%s: %v", d.name, err)
			}
			if err := d.do(d.file, orig); err != nil {
				t.Fatalf("%s: %v", d.name, err)
			}
			r := wantFsck(t, dir, env, 1, d.kind)
			if !strings.Contains(r.stdout, pid+"/events") {
				t.Fatalf("%s: fsck does not name the damaged log:\n%s", d.name, r.stdout)
			}
			if err := os.WriteFile(d.file, orig, 0o600); err != nil {
				t.Fatal(err)
			}
			wantFsck(t, dir, env, 0, "0 problems")
		}

		// An orphan: a payload object of committed sequences that no batch names (the
		// per-batch form of rows before group objects).
		orphan := filepath.Join(logDir, "payload", "1-orphanbatch")
		data := bundle
		if err := os.MkdirAll(filepath.Dir(orphan), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(orphan, data, 0o600); err != nil {
			t.Fatal(err)
		}
		wantFsck(t, dir, env, 0, "orphan_payload "+pid+"/events/payload/1-orphanbatch", "1 problems, 0 swept")
		wantFsck(t, dir, append(env, "FSCK_SWEEP=1"), 0, "swept "+pid+"/events/payload/1-orphanbatch")
		if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the swept orphan still exists: %v", err)
		}
		wantFsck(t, dir, env, 0, "0 problems")

		// A payload object beyond the committed size may be a batch being sealed: it is
		// not an orphan.
		pending := filepath.Join(logDir, "payload", "100000-inflight")
		if err := os.WriteFile(pending, data, 0o600); err != nil {
			t.Fatal(err)
		}
		wantFsck(t, dir, append(env, "FSCK_SWEEP=1"), 0, "0 problems")
		if _, err := os.Stat(pending); err != nil {
			t.Fatalf("fsck swept a payload object beyond the committed size: %v", err)
		}

		// A group payload object no batch row names is an orphan once it is older than
		// fsck.GroupGrace; a recent one may be a tick committing right now.
		old, err := tiles.GroupPayloadKey(time.Now().Add(-2*fsck.GroupGrace), "orphantick")
		if err != nil {
			t.Fatal(err)
		}
		recent, err := tiles.GroupPayloadKey(time.Now(), "inflighttick")
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range []string{old, recent} {
			f := filepath.Join(objects, filepath.FromSlash(key))
			if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		wantFsck(t, dir, env, 0, "orphan_payload "+old, "1 problems, 0 swept")
		wantFsck(t, dir, append(env, "FSCK_SWEEP=1"), 0, "swept "+old)
		if _, err := os.Stat(filepath.Join(objects, filepath.FromSlash(recent))); err != nil {
			t.Fatalf("fsck swept a recent group payload object: %v", err)
		}
	})
}

// logPayloads returns the group payload files matching glob that hold a segment of
// project pid's events stream (on the filesystem store each is a segment file with
// the payloads of many ticks end to end), sorted, and the offset and the bytes of
// the first such segment (a payload bundle) in the first file.
func logPayloads(t *testing.T, glob, pid string) (files []string, off int, bundle []byte) {
	t.Helper()
	eachSegment(t, glob, func(seg payloadSeg, data []byte, _ *tiles.PayloadBundle, leaf sttlog.Leaf) bool {
		if leaf.ProjectID != pid || leaf.Stream != "events" || len(files) > 0 && files[len(files)-1] == seg.file {
			return true
		}
		if files == nil {
			off, bundle = seg.off, data
		}
		files = append(files, seg.file)
		return true
	})
	return files, off, bundle
}

func flipLastByte(p string, d []byte) error {
	c := bytes.Clone(d)
	c[len(c)-1] ^= 1
	return os.WriteFile(p, c, 0o600)
}

// TestFsckOnS3: fsck passes on a healthy deployment whose store is S3 (versitygw),
// finds a deleted payload object there, and sweeps an orphan.
func TestFsckOnS3(t *testing.T) {
	srv := testenv.S3(t)
	prefix := "fsck-" + time.Now().Format("150405.000000")
	url := srv.URLWithPrefix(strings.ReplaceAll(prefix, ".", "-"))
	env := []string{"SEALTRAIL_STORE=" + url, "AWS_ACCESS_KEY_ID=" + srv.AccessKey, "AWS_SECRET_ACCESS_KEY=" + srv.SecretKey}
	dir, _ := fsckDeployment(t, env)
	wantFsck(t, dir, env, 0, "0 problems")

	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	ctx := context.Background()
	store, err := storeurl.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	var payloads []string
	if err := store.(tiles.Lister).List(ctx, tiles.GroupPayloadPrefix, func(k string) error { payloads = append(payloads, k); return nil }); err != nil || len(payloads) < 2 {
		t.Fatalf("list payloads: %v %v", payloads, err)
	}
	slices.Sort(payloads)
	data, err := store.Get(ctx, payloads[0])
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := tiles.GroupPayloadKey(time.Now().Add(-2*fsck.GroupGrace), "orphantick")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Create(ctx, orphan, data, tiles.PrivateAttrs); err != nil {
		t.Fatal(err)
	}
	wantFsck(t, dir, append(env, "FSCK_SWEEP=1"), 0, "swept "+orphan)
	if _, err := store.Get(ctx, orphan); !errors.Is(err, tiles.ErrNotFound) {
		t.Fatalf("orphan after --sweep: %v", err)
	}
	if err := store.Delete(ctx, payloads[1]); err != nil {
		t.Fatal(err)
	}
	wantFsck(t, dir, env, 1, "payload_missing "+payloads[1])
}
