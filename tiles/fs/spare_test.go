//go:build linux

package fs

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
)

// inode returns the inode number of the file p.
func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A replaced object's old file becomes its spare, and once the spare has rested it is
// rewritten and exchanged with the object instead of a new file being created: two
// files per replaceable object, whatever the number of replacements. A spare that
// has not rested is left alone (a reader may still hold it open), and a failed batch
// leaves the object as it was. The spare is never a key.
func TestCreateAllThenPutReusesTheSpare(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	clock = func() time.Time { return now }
	defer func() { clock = time.Now }()
	cp := filepath.Join(dir, "p", "checkpoint")
	spare := filepath.Join(dir, "p", ".prev-checkpoint")
	publish := func(n int, note string) error {
		tile := tiles.Object{Key: "p/tile/0/000.p/" + string(rune('0'+n)), Data: []byte(note + " tile")}
		return s.CreateAllThenPut(ctx, []tiles.Object{tile}, tiles.ImmutableAttrs, tiles.Object{Key: "p/checkpoint", Data: []byte(note)}, tiles.CheckpointAttrs)
	}

	// The first note is renamed into place; nothing to exchange with.
	if err := publish(1, "note one"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(spare); !errors.Is(err, os.ErrNotExist) || readString(t, cp) != "note one" {
		t.Fatalf("after the first note: spare %v, checkpoint %q", err, readString(t, cp))
	}
	// The second goes through a temporary file exchanged with the first, which becomes
	// the spare.
	first := inode(t, cp)
	if err := publish(2, "note two, longer than the first"); err != nil {
		t.Fatal(err)
	}
	if readString(t, cp) != "note two, longer than the first" || readString(t, spare) != "note one" || inode(t, spare) != first {
		t.Fatalf("after the second note: checkpoint %q, spare %q", readString(t, cp), readString(t, spare))
	}
	// Too soon: the spare has not rested, a new temporary file is used again.
	second, oldSpare := inode(t, cp), inode(t, spare)
	if err := publish(3, "note three"); err != nil {
		t.Fatal(err)
	}
	if readString(t, cp) != "note three" || readString(t, spare) != "note two, longer than the first" || inode(t, cp) == oldSpare || inode(t, spare) != second {
		t.Fatalf("a spare that had not rested: checkpoint %q (inode %d, spare was %d), spare %q", readString(t, cp), inode(t, cp), oldSpare, readString(t, spare))
	}
	// Rested: the spare is rewritten in place (shorter than before) and exchanged.
	now = now.Add(time.Hour)
	third, oldSpare := inode(t, cp), inode(t, spare)
	if err := publish(4, "note 4"); err != nil {
		t.Fatal(err)
	}
	if readString(t, cp) != "note 4" || inode(t, cp) != oldSpare || readString(t, spare) != "note three" || inode(t, spare) != third {
		t.Fatalf("a rested spare: checkpoint %q (inode %d, want %d), spare %q", readString(t, cp), inode(t, cp), oldSpare, readString(t, spare))
	}
	// A batch that fails (a conflicting tile) changes neither the object nor its keys.
	now = now.Add(time.Hour)
	conflict := tiles.Object{Key: "p/tile/0/000.p/4", Data: []byte("other bytes")}
	err = s.CreateAllThenPut(ctx, []tiles.Object{conflict}, tiles.ImmutableAttrs, tiles.Object{Key: "p/checkpoint", Data: []byte("note five")}, tiles.CheckpointAttrs)
	var ce *tiles.ConflictError
	if !errors.As(err, &ce) || readString(t, cp) != "note 4" {
		t.Fatalf("conflict: %v; checkpoint %q", err, readString(t, cp))
	}
	var keys []string
	if err := s.List(ctx, "p/", func(k string) error { keys = append(keys, k); return nil }); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys, " "); strings.Contains(got, "prev") || !strings.Contains(got, "p/checkpoint") || len(keys) != 5 {
		t.Fatalf("keys %s", got)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "p"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Fatalf("temporary file %s left behind", e.Name())
		}
	}
}
