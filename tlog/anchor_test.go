package tlog

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// anchorFixture builds a tree_heads log of three heads, the anchor proof of the middle
// one, and a cosignature of its checkpoint by a witness key.
type anchorFixture struct {
	pub     ed25519.PublicKey
	sth     STH
	proof   AnchorProof
	wvkey   string
	cosig   json.RawMessage
	attests time.Time
}

func newAnchorFixture(t *testing.T) anchorFixture {
	t.Helper()
	pub, priv, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	tree := &MemoryTree{}
	var heads []STH
	for i, p := range []string{"prj_a", "prj_b", "prj_c"} {
		s := STH{V: TreeHeadVersion, ProjectID: p, Stream: StreamEvents, TreeSize: uint64(10 + i),
			RootHash: Hex(LeafHash([]byte(p))), Timestamp: "2026-11-24T15:00:00.000Z"}
		if err := SignSTH(priv, &s); err != nil {
			t.Fatal(err)
		}
		leaf, err := TreeHeadLeaf(&s)
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.AppendLeafHash(LeafHash(leaf)); err != nil {
			t.Fatal(err)
		}
		heads = append(heads, s)
	}
	root, _ := tree.Root(3)
	cp, err := SignCheckpoint(priv, TreeHeadsOrigin("svc.test"), 3, root)
	if err != nil {
		t.Fatal(err)
	}
	path, err := ProveInclusion(1, 3, tree)
	if err != nil {
		t.Fatal(err)
	}
	f := anchorFixture{pub: pub, sth: heads[1], proof: AnchorProof{V: AnchorProofVersion, ProjectID: "prj_b", LeafIndex: 1,
		Checkpoint: string(cp)}}
	for _, h := range path {
		f.proof.Inclusion = append(f.proof.Inclusion, Hex(h))
	}
	// A cosignature/v1 by a witness key, built by hand from the C2SP definition.
	wskey, wvkey, err := note.GenerateKey(rand.Reader, "w.test")
	if err != nil {
		t.Fatal(err)
	}
	f.wvkey = wvkey
	seed, _ := base64.StdEncoding.DecodeString(strings.SplitN(wskey, "+", 5)[4])
	wpriv := ed25519.NewKeyFromSeed(seed[1:])
	f.attests = time.Unix(1_790_000_000, 0).UTC()
	body, _, _ := strings.Cut(string(cp), "\n\n")
	msg := "cosignature/v1\ntime 1790000000\n" + body + "\n"
	sig := binary.BigEndian.AppendUint32(nil, cosigKeyHash("w.test", wpriv.Public().(ed25519.PublicKey)))
	sig = binary.BigEndian.AppendUint64(sig, 1_790_000_000)
	sig = append(sig, ed25519.Sign(wpriv, []byte(msg))...)
	f.cosig, _ = json.Marshal(WitnessProof{Cosignatures: []string{"— w.test " + base64.StdEncoding.EncodeToString(sig)}})
	return f
}

func TestAnchorProof(t *testing.T) {
	f := newAnchorFixture(t)
	cp, err := CheckTreeHeadInclusion(&f.sth, &f.proof, f.pub)
	if err != nil || cp.Size != 3 || cp.Origin != "svc.test/tree_heads" {
		t.Fatalf("CheckTreeHeadInclusion = %+v, %v", cp, err)
	}
	if _, err := CheckTreeHeadInclusion(&f.sth, &f.proof, nil); err != nil {
		t.Fatalf("without the service key: %v", err)
	}
	at, err := VerifyWitness([]byte(f.proof.Checkpoint), f.cosig, []string{f.wvkey})
	if err != nil || !at.Equal(f.attests) {
		t.Fatalf("VerifyWitness = %v, %v; want %v", at, err, f.attests)
	}

	hostile := []struct {
		name string
		edit func(s *STH, p *AnchorProof)
	}{
		{"other root", func(s *STH, _ *AnchorProof) { s.RootHash = Hex(LeafHash([]byte("x"))) }},
		{"other size", func(s *STH, _ *AnchorProof) { s.TreeSize++ }},
		{"other project", func(_ *STH, p *AnchorProof) { p.ProjectID = "prj_a" }},
		{"other index", func(_ *STH, p *AnchorProof) { p.LeafIndex = 0 }},
		{"short proof", func(_ *STH, p *AnchorProof) { p.Inclusion = p.Inclusion[1:] }},
		{"bad proof hex", func(_ *STH, p *AnchorProof) { p.Inclusion[0] = "zz" }},
		{"edited checkpoint", func(_ *STH, p *AnchorProof) { p.Checkpoint = strings.Replace(p.Checkpoint, "\n3\n", "\n4\n", 1) }},
		{"not a note", func(_ *STH, p *AnchorProof) { p.Checkpoint = "svc.test/tree_heads\n3\n" }},
		{"other origin", func(_ *STH, p *AnchorProof) { p.Checkpoint = strings.Replace(p.Checkpoint, "tree_heads", "events", 1) }},
		{"version", func(_ *STH, p *AnchorProof) { p.V = 2 }},
	}
	for _, h := range hostile {
		s, p := f.sth, f.proof
		p.Inclusion = append([]string(nil), f.proof.Inclusion...)
		h.edit(&s, &p)
		if _, err := CheckTreeHeadInclusion(&s, &p, f.pub); !errors.Is(err, ErrAnchor) {
			t.Errorf("%s: %v, want ErrAnchor", h.name, err)
		}
	}
	// A head signed by another key fails with the service key given.
	_, other, _ := GenerateKey()
	s := f.sth
	if err := SignSTH(other, &s); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckTreeHeadInclusion(&s, &f.proof, f.pub); !errors.Is(err, ErrAnchor) {
		t.Errorf("head under another key: %v", err)
	}

	_, otherW, _ := note.GenerateKey(rand.Reader, "w.test")
	for name, tc := range map[string]struct {
		cp    string
		proof json.RawMessage
		keys  []string
	}{
		"other witness key": {f.proof.Checkpoint, f.cosig, []string{otherW}},
		"edited checkpoint": {strings.Replace(f.proof.Checkpoint, "\n3\n", "\n4\n", 1), f.cosig, []string{f.wvkey}},
		"no cosignature":    {f.proof.Checkpoint, json.RawMessage(`{"cosignatures":[]}`), []string{f.wvkey}},
		"unknown member":    {f.proof.Checkpoint, json.RawMessage(`{"cosignatures":["— w.test AAAA"],"x":1}`), []string{f.wvkey}},
		"line injection":    {f.proof.Checkpoint, json.RawMessage(`{"cosignatures":["— w.test AAAA\n— x y"]}`), []string{f.wvkey}},
		"time edited":       {f.proof.Checkpoint, editCosigTime(t, f.cosig), []string{f.wvkey}},
	} {
		if _, err := VerifyWitness([]byte(tc.cp), tc.proof, tc.keys); !errors.Is(err, ErrAnchor) {
			t.Errorf("witness %s: %v, want ErrAnchor", name, err)
		}
	}
	if _, err := VerifyWitness([]byte(f.proof.Checkpoint), f.cosig, []string{"not a key"}); err == nil || errors.Is(err, ErrAnchor) {
		t.Errorf("malformed witness key: %v, want an input error", err)
	}
}

// editCosigTime moves the attested time of the first cosignature by one second.
func editCosigTime(t *testing.T, proof json.RawMessage) json.RawMessage {
	var wp WitnessProof
	if err := json.Unmarshal(proof, &wp); err != nil {
		t.Fatal(err)
	}
	i := strings.LastIndex(wp.Cosignatures[0], " ")
	raw, _ := base64.StdEncoding.DecodeString(wp.Cosignatures[0][i+1:])
	binary.BigEndian.PutUint64(raw[4:], binary.BigEndian.Uint64(raw[4:])+1)
	wp.Cosignatures[0] = wp.Cosignatures[0][:i+1] + base64.StdEncoding.EncodeToString(raw)
	out, _ := json.Marshal(wp)
	return out
}
