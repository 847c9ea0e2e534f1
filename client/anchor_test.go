package client

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/sealtrail/sealtrail/tlog"
)

// anchoredLog is a fakeLog behind a proxy that also serves GET /anchors with heads the
// test builds: each is the only leaf of a one-leaf tree_heads log whose checkpoint the
// fake's key signs, as the service's anchoring job would (package anchor).
type anchoredLog struct {
	*fakeLog
	srv   *httptest.Server
	mu    sync.Mutex
	heads []AttestedHead
}

func newAnchoredLog(t *testing.T) *anchoredLog {
	a := &anchoredLog{fakeLog: newFakeLog(t)}
	target, _ := url.Parse(a.fakeLog.srv.URL)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/anchors", func(w http.ResponseWriter, _ *http.Request) {
		a.mu.Lock()
		defer a.mu.Unlock()
		writeTestJSON(w, http.StatusOK, map[string]any{"stream": "events", "heads": a.heads})
	})
	mux.Handle("/", httputil.NewSingleHostReverseProxy(target))
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

// anchor signs a head of the events stream of size n with root (the live root when
// root is nil), anchors it and serves it as the newest head.
func (a *anchoredLog) anchor(t *testing.T, n uint64, root *tlog.Hash) AttestedHead {
	t.Helper()
	if root == nil {
		a.fakeLog.mu.Lock()
		r, err := a.trees[tlog.StreamEvents].Root(n)
		a.fakeLog.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		root = &r
	}
	sth := tlog.STH{V: tlog.TreeHeadVersion, ProjectID: a.projectID, Stream: tlog.StreamEvents, TreeSize: n,
		RootHash: tlog.Hex(*root), Timestamp: tlog.FormatTime(time.Now())}
	if err := tlog.SignSTH(a.key, &sth); err != nil {
		t.Fatal(err)
	}
	leaf, err := tlog.TreeHeadLeaf(&sth)
	if err != nil {
		t.Fatal(err)
	}
	note, err := tlog.SignCheckpoint(a.key, tlog.TreeHeadsOrigin("fake.test"), 1, tlog.LeafHash(leaf))
	if err != nil {
		t.Fatal(err)
	}
	proof, _ := json.Marshal(tlog.AnchorProof{V: tlog.AnchorProofVersion, ProjectID: a.projectID, Inclusion: []string{},
		Checkpoint: string(note), External: []tlog.ExternalProof{{AnchorType: "witness", AnchorRef: "w@1", Proof: json.RawMessage(`{}`)}}})
	typ, ref, at := "witness", "w@1", tlog.FormatTime(time.Now())
	h := AttestedHead{TreeSize: n, RootHash: sth.RootHash, Timestamp: sth.Timestamp, Signature: sth.Signature,
		AnchorType: &typ, AnchorRef: &ref, AnchorProof: proof, AnchoredAt: &at}
	a.mu.Lock()
	a.heads = append([]AttestedHead{h}, a.heads...)
	a.mu.Unlock()
	return h
}

// TestVerifyAnchor: an anchored head verifies against the pins, also once the tree has
// grown past it; a head the service anchored for a tree its pinned history
// contradicts is inconsistent_tree and poisons the client; a broken link is
// ErrProofFailed and poisons nothing.
func TestVerifyAnchor(t *testing.T) {
	ctx := context.Background()
	a := newAnchoredLog(t)
	a.grow(t, tlog.StreamEvents, 5)
	c, err := New(Config{APIKey: "k", BaseURL: a.srv.URL, AutoVerify: boolPtr(false), ServicePublicKey: a.publicKey()})
	if err != nil {
		t.Fatal(err)
	}
	h := a.anchor(t, 5, nil)
	va, err := c.VerifyAnchor(ctx, StreamEvents, &h)
	if err != nil || va.Head.TreeSize != 5 || va.Pinned.TreeSize != 5 || va.TreeHeads.Size != 1 {
		t.Fatalf("VerifyAnchor = %+v, %v", va, err)
	}
	a.grow(t, tlog.StreamEvents, 3)
	if va, err = c.VerifyAnchor(ctx, StreamEvents, &h); err != nil || va.Pinned.TreeSize != 8 {
		t.Fatalf("VerifyAnchor after growth = %+v, %v", va, err)
	}

	broken := h
	broken.RootHash = tlog.Hex(tlog.LeafHash([]byte("x")))
	if _, err := c.VerifyAnchor(ctx, StreamEvents, &broken); !errors.Is(err, ErrProofFailed) || c.Err() != nil {
		t.Fatalf("a head that is not the anchored leaf: %v (client err %v), want ErrProofFailed", err, c.Err())
	}
	unanchored := h
	unanchored.AnchorProof = json.RawMessage("null")
	if _, err := c.VerifyAnchor(ctx, StreamEvents, &unanchored); !errors.Is(err, ErrNotAnchored) {
		t.Fatalf("unanchored head: %v", err)
	}
	// Witness keys configured: the fake's empty witness proof is not enough.
	_, vkey, err := note.GenerateKey(rand.Reader, "some-witness")
	if err != nil {
		t.Fatal(err)
	}
	cw, err := New(Config{APIKey: "k", BaseURL: a.srv.URL, AutoVerify: boolPtr(false), ServicePublicKey: a.publicKey(),
		WitnessKeys: []string{vkey}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cw.VerifyAnchor(ctx, StreamEvents, &h); !errors.Is(err, ErrProofFailed) {
		t.Fatalf("anchor without a trusted cosignature: %v", err)
	}

	// The service signs and anchors another tree of size 6: its history now has two.
	forged := tlog.LeafHash([]byte("forged root"))
	fork := a.anchor(t, 6, &forged)
	_, err = c.VerifyAnchor(ctx, StreamEvents, &fork)
	var te *TamperError
	if !errors.As(err, &te) || te.Reason != ReasonInconsistentTree || !errors.Is(c.Err(), ErrTampered) {
		t.Fatalf("forked anchored head: %v, want inconsistent_tree", err)
	}
}

// TestAnchorOpportunistic: the background check after Log also compares the newest
// anchored head with the pinned history.
func TestAnchorOpportunistic(t *testing.T) {
	a := newAnchoredLog(t)
	a.grow(t, tlog.StreamEvents, 4)
	forged := tlog.LeafHash([]byte("forged root"))
	a.anchor(t, 3, &forged)
	var got *TamperError
	var mu sync.Mutex
	c, err := New(Config{APIKey: "k", BaseURL: a.srv.URL, ServicePublicKey: a.publicKey(), AutoVerifyInterval: time.Millisecond,
		OnTamper: func(e *TamperError) { mu.Lock(); got = e; mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Log(context.Background(), EventInput{Action: "a", Actor: Entity{Type: "user", ID: "u"}}); err != nil {
		t.Fatal(err)
	}
	c.Wait()
	mu.Lock()
	defer mu.Unlock()
	if got == nil || got.Reason != ReasonInconsistentTree || !errors.Is(c.Err(), ErrTampered) {
		t.Fatalf("opportunistic check: tamper %v, client err %v; want inconsistent_tree", got, c.Err())
	}
}
