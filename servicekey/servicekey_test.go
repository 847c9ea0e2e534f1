package servicekey

import (
	"crypto/ed25519"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, k, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func pub(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

// TestRotateAndLoad: a missing history is empty and accepts any key; each rotation
// appends a transition that Load accepts only with the newest key; a damaged file and
// a rotation from a retired key are refused and change nothing.
func TestRotateAndLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.json")
	k0, k1, k2 := newKey(t), newKey(t), newKey(t)
	if h, err := Load(path, pub(k0)); err != nil || len(h.Transitions) != 0 {
		t.Fatalf("missing history: %v %v", h, err)
	}
	now := time.Now()
	if _, err := Rotate(path, k0, k1, now); err != nil {
		t.Fatal(err)
	}
	h, err := Rotate(path, k1, k2, now.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if h.Current() != hex.EncodeToString(pub(k2)) || len(h.Transitions) != 2 {
		t.Fatalf("after two rotations: %+v", h)
	}
	if _, err := Load(path, pub(k2)); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, pub(k1)); err == nil || !strings.Contains(err.Error(), "ends at key") {
		t.Fatalf("Load with a retired key: %v", err)
	}
	before, _ := os.ReadFile(path)
	if _, err := Rotate(path, k0, newKey(t), now.Add(2*time.Second)); err == nil {
		t.Fatal("a rotation from a retired key was accepted")
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Fatal("a refused rotation changed the history")
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(before), `"seq": 2`, `"seq": 3`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path, pub(k2)); err == nil {
		t.Fatal("a damaged history was loaded")
	}
}

// TestHandler: the route serves the history as JSON that ParseKeyHistory accepts, an
// empty history as an empty list, and refuses other methods with 405 and a JSON body.
func TestHandler(t *testing.T) {
	k0, k1 := newKey(t), newKey(t)
	h := &tlog.KeyHistory{}
	tr, err := tlog.NewKeyTransition(h, k0, k1, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	h.Transitions = append(h.Transitions, tr)
	for _, c := range []struct {
		h    *tlog.KeyHistory
		want int
	}{{h, 1}, {&tlog.KeyHistory{}, 0}} {
		rec := httptest.NewRecorder()
		Handler(c.h).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/key-history", nil))
		got, err := tlog.ParseKeyHistory(rec.Body.Bytes())
		if rec.Code != http.StatusOK || err != nil || len(got.Transitions) != c.want {
			t.Fatalf("GET: %d %s (%v)", rec.Code, rec.Body, err)
		}
		if !strings.Contains(rec.Body.String(), `"transitions":[`) {
			t.Fatalf("body %s has no transitions list", rec.Body)
		}
	}
	rec := httptest.NewRecorder()
	Handler(h).ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/key-history", nil))
	if rec.Code != http.StatusMethodNotAllowed || !strings.Contains(rec.Body.String(), `"error"`) {
		t.Fatalf("POST: %d %s", rec.Code, rec.Body)
	}
}
