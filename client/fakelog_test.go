package client

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// misbehaviour is what the fake service does wrong when serving heads and proofs.
type misbehaviour int

const (
	honest       misbehaviour = iota
	forkSameSize              // a tree of the live size with different leaves
	forkGrown                 // a larger tree whose first leaves differ from the live tree's
	shrunk                    // the live tree minus its last leaf
	otherKeySig               // the live head signed by another key, the real key advertised
	keyChanged                // the live head signed by another key, that key advertised
	otherProject              // the live head, validly signed, as the head of another project
	otherStream               // the other stream's head, validly signed, for this stream
	// Consistency proofs that do not prove the served head extends the pinned one:
	proofRefused     // 400 for the sizes asked, although the service signed both
	proofBadHex      // a proof hash that is not hex
	proofShortHash   // a proof hash of 31 bytes
	proofExtraHash   // one hash too many
	proofMissingHash // one hash too few
	proofOtherSizes  // a valid proof, for an older size than the one asked
	proofOtherStream // the proof asked for, labelled with the other stream
)

// fakeLog is an in-process Sealtrail that keeps each stream's tree in a tlog.MemoryTree,
// signs heads with tlog.SignSTH and can be switched to misbehave on purpose. It serves
// /log, /events, /root, /verify and /proof/consistency.
type fakeLog struct {
	srv       *httptest.Server
	key       ed25519.PrivateKey
	other     ed25519.PrivateKey
	projectID string

	mu        sync.Mutex
	trees     map[string]*tlog.MemoryTree // by signed stream name
	mode      misbehaviour
	rootFail  string            // "503": answer /root with 503; "drop": drop the connection
	proofFail string            // an HTTP status, "drop" or "html": how /proof/consistency fails
	rootDelay time.Duration     // delay before answering /root
	rootGate  chan struct{}     // when set, /root waits for it to close
	signer    ed25519.PublicKey // when set, /log requires events signed by it
	logged    []json.RawMessage // bodies accepted by /log

	rootHits, proofHits, logHits atomic.Int64
	inflight, maxInflight        atomic.Int64 // concurrent /root requests
}

func newFakeLog(t testing.TB) *fakeLog {
	t.Helper()
	_, key, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeLog{key: key, other: other, projectID: "prj_fake",
		trees: map[string]*tlog.MemoryTree{tlog.StreamEvents: {}, tlog.StreamProjectAudit: {}}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v1/log", f.log)
	mux.HandleFunc("GET /api/v1/events", func(w http.ResponseWriter, _ *http.Request) {
		writeTestJSON(w, http.StatusOK, map[string]any{"events": []any{}})
	})
	mux.HandleFunc("GET /api/v1/root", f.root)
	mux.HandleFunc("GET /api/v1/proof/consistency", f.consistency)
	mux.HandleFunc("GET /api/v1/verify", f.verify)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeLog) publicKey() string { return hex.EncodeToString(f.key.Public().(ed25519.PublicKey)) }

func writeTestJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// grow appends n leaves to a stream's live tree.
func (f *fakeLog) grow(t testing.TB, stream string, n int) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	tr := f.trees[stream]
	for range n {
		if err := tr.AppendLeafHash(tlog.LeafHash(fmt.Appendf(nil, "leaf %d", tr.Size()))); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fakeLog) setMode(m misbehaviour) {
	f.mu.Lock()
	f.mode = m
	f.mu.Unlock()
}

func (f *fakeLog) setRootFail(how string) {
	f.mu.Lock()
	f.rootFail = how
	f.mu.Unlock()
}

func (f *fakeLog) setProofFail(how string) {
	f.mu.Lock()
	f.proofFail = how
	f.mu.Unlock()
}

// served returns the tree the fake pretends is live, its size, the key that signs its
// head and the key it advertises.
func (f *fakeLog) served(stream string) (*tlog.MemoryTree, uint64, ed25519.PrivateKey, string, error) {
	live := f.trees[stream]
	pub := f.publicKey()
	switch f.mode {
	case forkSameSize, forkGrown:
		fork := &tlog.MemoryTree{}
		n := live.Size()
		if f.mode == forkGrown {
			n += 3
		}
		for i := range n {
			if err := fork.AppendLeafHash(tlog.LeafHash(fmt.Appendf(nil, "forged leaf %d", i))); err != nil {
				return nil, 0, nil, "", err
			}
		}
		return fork, n, f.key, pub, nil
	case shrunk:
		return live, live.Size() - 1, f.key, pub, nil
	case otherKeySig:
		return live, live.Size(), f.other, pub, nil
	case keyChanged:
		return live, live.Size(), f.other, hex.EncodeToString(f.other.Public().(ed25519.PublicKey)), nil
	}
	return live, live.Size(), f.key, pub, nil
}

func streamOf(r *http.Request) string {
	if r.URL.Query().Get("stream") == "project-audit" {
		return tlog.StreamProjectAudit
	}
	return tlog.StreamEvents
}

// otherStreamOf returns the signed name of the stream that is not stream.
func otherStreamOf(stream string) string {
	if stream == tlog.StreamEvents {
		return tlog.StreamProjectAudit
	}
	return tlog.StreamEvents
}

// failRequest answers as a failing service or network does when how is set ("drop",
// "html" or an HTTP status) and reports whether it did.
func failRequest(w http.ResponseWriter, how string) bool {
	switch how {
	case "":
		return false
	case "drop":
		panic(http.ErrAbortHandler) // the client sees a transport error
	case "html":
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, "<html><body>Service Unavailable</body></html>")
		return true
	}
	status, err := strconv.Atoi(how)
	if err != nil {
		panic("fakeLog: unknown failure " + how)
	}
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "3")
	}
	writeTestJSON(w, status, map[string]string{"error": http.StatusText(status)})
	return true
}

func (f *fakeLog) root(w http.ResponseWriter, r *http.Request) {
	f.rootHits.Add(1)
	n := f.inflight.Add(1)
	defer f.inflight.Add(-1)
	for {
		m := f.maxInflight.Load()
		if n <= m || f.maxInflight.CompareAndSwap(m, n) {
			break
		}
	}
	f.mu.Lock()
	delay, fail, gate := f.rootDelay, f.rootFail, f.rootGate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if failRequest(w, fail) {
		return
	}
	f.mu.Lock()
	projectID, stream := f.projectID, streamOf(r)
	switch f.mode {
	case otherProject:
		projectID = "prj_other"
	case otherStream:
		stream = otherStreamOf(stream)
	}
	tr, size, signer, pub, err := f.served(stream)
	var root tlog.Hash
	if err == nil {
		root, err = tr.Root(size)
	}
	f.mu.Unlock()
	if err != nil {
		writeTestJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	sth := tlog.STH{V: tlog.TreeHeadVersion, ProjectID: projectID, Stream: stream, TreeSize: size,
		RootHash: tlog.Hex(root), Timestamp: tlog.FormatTime(time.Now())}
	if err := tlog.SignSTH(signer, &sth); err != nil {
		writeTestJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	writeTestJSON(w, http.StatusOK, map[string]any{"sth": sth, "servicePublicKey": pub})
}

func (f *fakeLog) consistency(w http.ResponseWriter, r *http.Request) {
	f.proofHits.Add(1)
	oldSize, err1 := strconv.ParseUint(r.URL.Query().Get("oldSize"), 10, 64)
	newSize, err2 := strconv.ParseUint(r.URL.Query().Get("newSize"), 10, 64)
	if err1 != nil || err2 != nil || oldSize > newSize {
		writeTestJSON(w, http.StatusBadRequest, map[string]string{"error": "bad sizes"})
		return
	}
	f.mu.Lock()
	mode, fail := f.mode, f.proofFail
	stream, proveFrom := streamOf(r), oldSize
	if mode == proofOtherSizes {
		proveFrom--
	}
	tr, _, _, _, err := f.served(stream)
	var proof []tlog.Hash
	if err == nil {
		proof = []tlog.Hash{}
		if proveFrom > 0 && proveFrom < newSize {
			proof, err = tlog.ProveConsistency(proveFrom, newSize, tr)
		}
	}
	f.mu.Unlock()
	if failRequest(w, fail) {
		return
	}
	if err != nil || mode == proofRefused {
		writeTestJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("need oldSize <= newSize <= live size (%v)", err)})
		return
	}
	hs := make([]string, len(proof))
	for i, h := range proof {
		hs[i] = tlog.Hex(h)
	}
	switch mode {
	case proofBadHex:
		hs[0] = "zz" + hs[0][2:]
	case proofShortHash:
		hs[0] = hs[0][:62]
	case proofExtraHash:
		hs = append(hs, hs[0])
	case proofMissingHash:
		hs = hs[:len(hs)-1]
	case proofOtherStream:
		stream = otherStreamOf(stream)
	}
	writeTestJSON(w, http.StatusOK, map[string]any{"stream": stream, "oldSize": proveFrom, "newSize": newSize, "proof": hs})
}

func (f *fakeLog) verify(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	tr := f.trees[streamOf(r)]
	size := tr.Size()
	root, err := tr.Root(size)
	f.mu.Unlock()
	if err != nil {
		writeTestJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	rec := tlog.Receipt{ReceiptVersion: tlog.ReceiptVersion, Stream: streamOf(r), ProjectID: f.projectID, Valid: true,
		CheckedCount: size, TreeSize: size, RootHash: tlog.Hex(root), VerifiedAt: tlog.FormatTime(time.Now())}
	key := f.key
	if f.mode == keyChanged {
		key = f.other
	}
	if err := tlog.SignReceipt(key, &rec); err != nil {
		writeTestJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	writeTestJSON(w, http.StatusOK, rec)
}

// log accepts an event and appends a leaf for it. With a signer set it checks the
// signature the way the service does: commitment re-derived from the payload members.
func (f *fakeLog) log(w http.ResponseWriter, r *http.Request) {
	f.logHits.Add(1)
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		writeTestJSON(w, http.StatusBadRequest, map[string]string{"error": "Invalid JSON"})
		return
	}
	id := "evt_fake" + strconv.FormatInt(f.logHits.Load(), 10)
	f.mu.Lock()
	signer := f.signer
	f.mu.Unlock()
	if signer != nil {
		if err := checkSignedBody(signer, body); err != nil {
			writeTestJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		_ = json.Unmarshal(m["id"], &id)
	}
	sum := sha256.Sum256(body)
	f.mu.Lock()
	err = f.trees[tlog.StreamEvents].AppendLeafHash(tlog.LeafHash(sum[:]))
	f.logged = append(f.logged, body)
	f.mu.Unlock()
	if err != nil {
		writeTestJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	writeTestJSON(w, http.StatusAccepted, map[string]string{"id": id, "status": "sealed"})
}

// checkSignedBody verifies a signed ingest body independently of the client's code
// path: canonicalize the body, drop the transport members, re-derive the commitment.
func checkSignedBody(pub ed25519.PublicKey, body []byte) error {
	canon, err := tlog.Canonicalize(body)
	if err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(canon, &m); err != nil {
		return err
	}
	var id, nonceHex, sig string
	for name, dst := range map[string]*string{"id": &id, "nonce": &nonceHex, "signature": &sig} {
		if err := json.Unmarshal(m[name], dst); err != nil {
			return fmt.Errorf("member %s: %w", name, err)
		}
	}
	for _, k := range []string{"id", "nonce", "signingKeyId", "signature"} {
		delete(m, k)
	}
	payload, err := json.Marshal(m)
	if err != nil {
		return err
	}
	nonce, err := tlog.ParseNonce(nonceHex)
	if err != nil {
		return err
	}
	_, commitment, err := tlog.CommitPayload(nonce, payload)
	if err != nil {
		return err
	}
	return tlog.VerifyEventSignature(pub, id, commitment, sig)
}

// newTestClient returns a client of f with auto-verify off unless cfg says otherwise.
func newTestClient(t testing.TB, f *fakeLog, cfg Config) *Client {
	t.Helper()
	cfg.APIKey = "stk_test"
	cfg.BaseURL = f.srv.URL + "/"
	if cfg.AutoVerify == nil {
		off := false
		cfg.AutoVerify = &off
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
