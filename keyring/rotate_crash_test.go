package keyring

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
)

// rewrapChildEnv names the catalog file when the test binary runs as
// TestRewrapKilled's child; the KEKs come in rewrapOldEnv and rewrapNewEnv (hex).
const (
	rewrapChildEnv = "SEALTRAIL_REWRAP_CHILD"
	rewrapOldEnv   = "SEALTRAIL_REWRAP_OLD_KEK"
	rewrapNewEnv   = "SEALTRAIL_REWRAP_NEW_KEK"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(rewrapChildEnv); path != "" {
		rewrapUntilKilled(path)
	}
	os.Exit(m.Run())
}

func kekFromEnv(env string) *FileKEK {
	raw, err := hex.DecodeString(os.Getenv(env))
	if err != nil {
		panic(err)
	}
	k, err := NewFileKEK(raw)
	if err != nil {
		panic(err)
	}
	return k
}

// ackingStore prints "acked <log> <epoch>" after each rewrap the catalog committed.
type ackingStore struct{ *sqlite.DB }

func (s ackingStore) RewrapDataKey(ctx context.Context, old catalog.DataKey, kekID string, wrapped []byte) (bool, error) {
	ok, err := s.DB.RewrapDataKey(ctx, old, kekID, wrapped)
	if ok && err == nil {
		fmt.Printf("acked %s %s\n", old.Log, old.Epoch)
		time.Sleep(time.Millisecond) // so that the kill lands mid-run, not after it
	}
	return ok, err
}

// rewrapUntilKilled is the child: it rewraps the catalog at path from the old KEK to
// the new one, acknowledging each row, and exits when done.
func rewrapUntilKilled(path string) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		panic(err)
	}
	kr := New(db, kekFromEnv(rewrapNewEnv), Options{Previous: []Wrapper{kekFromEnv(rewrapOldEnv)}})
	if _, err := kr.Rewrap(ctx, ackingStore{db}, nil); err != nil {
		fmt.Fprintln(os.Stderr, "rewrap:", err)
		os.Exit(2)
	}
	fmt.Println("done")
	os.Exit(0)
}

// TestRewrapKilled SIGKILLs a process in the middle of a rewrap, several times over:
// after each kill every payload still opens (each key is under one KEK or the other),
// every acknowledged rewrap survived, and the next run resumes; at the end the old KEK
// is no longer needed.
func TestRewrapKilled(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "catalog.db")
	db, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	oldRaw, newRaw := make([]byte, 32), make([]byte, 32)
	for i := range oldRaw {
		oldRaw[i], newRaw[i] = byte(i), byte(255-i)
	}
	oldKEK, _ := NewFileKEK(oldRaw)
	newKEK, _ := NewFileKEK(newRaw)
	type sealed struct {
		log catalog.LogID
		ct  []byte
	}
	var msgs []sealed
	kr := New(db, oldKEK, Options{})
	const logs, epochs = 20, 6
	for i := range logs {
		log := catalog.LogID{ProjectID: fmt.Sprintf("prj_%03d", i), Stream: catalog.StreamEvents}
		for e := range epochs {
			ct, err := kr.Encrypt(ctx, log, fmt.Sprintf("2026-%02d", e+1), []byte(log.String()), nil)
			if err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, sealed{log, ct})
		}
	}
	db.Close()
	check := func(round int, acked map[string]bool) (underNew int) {
		t.Helper()
		db, err := sqlite.Open(ctx, path, sqlite.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		kr := New(db, newKEK, Options{Previous: []Wrapper{oldKEK}})
		for _, m := range msgs {
			if pt, err := kr.Decrypt(ctx, m.log, m.ct, nil); err != nil || string(pt) != m.log.String() {
				t.Fatalf("round %d: payload of %s after the kill: %q, %v", round, m.log, pt, err)
			}
		}
		for i := range logs {
			keys, err := db.ListDataKeys(ctx, catalog.LogID{ProjectID: fmt.Sprintf("prj_%03d", i), Stream: catalog.StreamEvents})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if k.KEKID == newKEK.ID() {
					underNew++
				} else if acked[k.Log.String()+" "+k.Epoch] {
					t.Fatalf("round %d: the acknowledged rewrap of %s %s was lost", round, k.Log, k.Epoch)
				}
			}
		}
		return underNew
	}
	acked := map[string]bool{}
	for round := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), rewrapChildEnv+"="+path, rewrapOldEnv+"="+hex.EncodeToString(oldRaw),
			rewrapNewEnv+"="+hex.EncodeToString(newRaw))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		for n := 0; n < 20 && sc.Scan(); n++ {
			if a, ok := strings.CutPrefix(sc.Text(), "acked "); ok {
				acked[a] = true
			}
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		for sc.Scan() { // acknowledgements printed before the kill landed count too
			if a, ok := strings.CutPrefix(sc.Text(), "acked "); ok {
				acked[a] = true
			}
		}
		_ = cmd.Wait()
		if n := check(round, acked); n < len(acked) || n == logs*epochs {
			t.Fatalf("round %d: %d keys under the new KEK, %d acknowledged; want the run cut short", round, n, len(acked))
		}
	}
	// The last run finishes; the old KEK is then not needed.
	db, err = sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := New(db, newKEK, Options{Previous: []Wrapper{oldKEK}}).Rewrap(ctx, db, nil); err != nil {
		t.Fatal(err)
	}
	only := New(db, newKEK, Options{})
	for _, m := range msgs {
		if _, err := only.Decrypt(ctx, m.log, m.ct, nil); err != nil {
			t.Fatalf("payload of %s without the old KEK: %v", m.log, err)
		}
	}
}
