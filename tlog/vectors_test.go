package tlog

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The published test vectors in testdata/vectors let a client in another language prove
// it produces Sealtrail's bytes. This test recomputes every one of them from its inputs;
// `go test ./tlog -run TestVectors -update` rewrites them (only ever on purpose: a
// changed vector is a changed wire format).

var update = flag.Bool("update", false, "rewrite testdata/vectors from the code")

const vectorDir = "../testdata/vectors"

type vectorFile struct {
	Description string `json:"description"`
	Cases       any    `json:"cases"`
}

func seedKey(b byte) (seedHex string, priv ed25519.PrivateKey) {
	seed := bytes.Repeat([]byte{b}, ed25519.SeedSize)
	return hex.EncodeToString(seed), ed25519.NewKeyFromSeed(seed)
}

func pubHex(priv ed25519.PrivateKey) string {
	return hex.EncodeToString(priv.Public().(ed25519.PublicKey))
}

func nonceOf(b byte) Nonce {
	var n Nonce
	for i := range n {
		n[i] = b + byte(i)
	}
	return n
}

func buildVectors(t *testing.T) map[string]vectorFile {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]vectorFile{}

	// RFC 8785 beyond the official vectors: Sealtrail-shaped payloads.
	// A case has Canonical when the input is accepted, Rejected (the reason) when it
	// must be refused.
	type jcsCase struct {
		Input     string
		Canonical string `json:",omitempty"`
		Rejected  string `json:",omitempty"`
	}
	var jcs []jcsCase
	for _, in := range []string{
		`{"actor":{"type":"user","id":"u1"},"action":"doc.read"}`,
		`{"metadata":{"b":2.50,"a":1e21,"c":-0},"action":"x","actor":{"id":"é","type":"t"}}`,
		`{"context":{"\u20ac":"euro","\ud83d\ude02":"smiley","\ufb33":"dalet"},"action":"x","actor":{"id":"1","type":"t"}}`,
		`{"metadata":{"a":9007199254740992.0,"b":90071992547409920e-1,"c":1000000000000000000000.0}}`,
	} {
		c, err := Canonicalize([]byte(in))
		must(err)
		jcs = append(jcs, jcsCase{Input: in, Canonical: string(c)})
	}
	// Numbers whose exact value lies beyond 2^53 and below 1e21 (docs/formats.md).
	for _, in := range []string{
		`{"metadata":{"n":9007199254740993}}`,
		`{"metadata":{"n":9007199254740993.0}}`,
		`{"metadata":{"n":9007199254740993e0}}`,
		`{"metadata":{"n":90071992547409930e-1}}`,
		`{"metadata":{"n":9007199254740992.5}}`,
		`{"metadata":{"n":1e16}}`,
		`{"metadata":{"n":999999999999999999999.5}}`,
	} {
		_, err := Canonicalize([]byte(in))
		if !errors.Is(err, ErrIntegerRange) {
			t.Fatalf("Canonicalize(%s) = %v, want ErrIntegerRange", in, err)
		}
		jcs = append(jcs, jcsCase{Input: in, Rejected: ErrIntegerRange.Error()})
	}
	// Literals longer than strconv.ParseFloat's 800 digits (shortLiteral): the values
	// ECMAScript reads, which the TypeScript client's test checks against JSON.parse.
	long := strings.Repeat("0", 1500)
	for _, c := range []struct{ in, want string }{
		{`{"metadata":{"n":1` + long + `e-1500}}`, `{"metadata":{"n":1}}`},
		{`{"metadata":{"n":-0.` + long[1:] + `1e1500,"m":1` + long[:801] + `e-801}}`, `{"metadata":{"m":1,"n":-1}}`},
		{`{"metadata":{"n":` + strings.Repeat("1", 1501) + `e-1490}}`, `{"metadata":{"n":11111111111.11111}}`},
		{`{"metadata":{"n":0.` + long + `5}}`, `{"metadata":{"n":0}}`},
		// 1 + 2^-53, halfway between 1 and the next double: to even; a nonzero digit
		// a thousand places further is above halfway (the sticky digit).
		{`{"metadata":{"n":1.00000000000000011102230246251565404236316680908203125` + long[:1000] + `}}`, `{"metadata":{"n":1}}`},
		{`{"metadata":{"n":1.00000000000000011102230246251565404236316680908203125` + long[:1000] + `1}}`, `{"metadata":{"n":1.0000000000000002}}`},
	} {
		got, err := Canonicalize([]byte(c.in))
		if err != nil || string(got) != c.want {
			t.Fatalf("Canonicalize(%.40s...) = %s, %v; want %s", c.in, got, err, c.want)
		}
		jcs = append(jcs, jcsCase{Input: c.in, Canonical: c.want})
	}
	files["jcs.json"] = vectorFile{"RFC 8785 canonical form of sample payloads.", jcs}

	type commitCase struct{ Nonce, Payload, CanonicalPayload, PayloadHash string }
	var commits []commitCase
	for i, p := range []string{
		`{"action":"user.login","actor":{"type":"user","id":"u_123"},"status":"success"}`,
		`{"status":"approved","action":"tool.call","actor":{"type":"agent","id":"agt_9","display":"Helper"},"toolName":"search","risk":"low","metadata":{"q":"x","n":3}}`,
	} {
		n := nonceOf(byte(16 * i))
		c, h, err := CommitPayload(n, []byte(p))
		must(err)
		commits = append(commits, commitCase{n.Hex(), p, string(c), Hex(h)})
	}
	files["commitment.json"] = vectorFile{"payloadHash = hex(SHA-256(nonce || JCS(payload))).", commits}

	type sigCase struct{ PrivateKeySeed, PublicKey, EventID, PayloadHash, Message, Signature string }
	seed, priv := seedKey(1)
	var sigs []sigCase
	for _, id := range []string{"evt_01JD0000000000000000000000", "evt_client-minted_1"} {
		ph := Commitment(nonceOf(1), []byte(`{"action":"a","actor":{"id":"1","type":"t"}}`))
		sigs = append(sigs, sigCase{seed, pubHex(priv), id, Hex(ph), string(EventSigningMessage(id, ph)), SignEvent(priv, id, ph)})
	}
	files["event-signature.json"] = vectorFile{"Customer Ed25519 signature over \"sealtrail/event/v1\\n<eventId>\\n<payloadHash>\"; keys and signature in lowercase hex.", sigs}

	type leafCase struct {
		Leaf     map[string]any
		LeafData string
		LeafHash string
	}
	var leaves []leafCase
	for _, signed := range []bool{false, true} {
		l := Leaf{ProjectID: "prj_01JDVECTOR", Stream: StreamEvents, Sequence: 1, ID: "evt_01JD0000000000000000000000",
			Timestamp: "2026-11-21T10:00:00.123Z", PayloadHash: Commitment(nonceOf(2), []byte(`{}`))}
		fields := map[string]any{"v": 1, "projectId": l.ProjectID, "stream": l.Stream, "sequence": l.Sequence,
			"id": l.ID, "timestamp": l.Timestamp, "payloadHash": Hex(l.PayloadHash)}
		if signed {
			l.Stream, l.Sequence = StreamProjectAudit, 9007199254740992
			l.SigningKeyID, l.Signature = "sk_vector", SignEvent(priv, l.ID, l.PayloadHash)
			fields["stream"], fields["sequence"] = l.Stream, l.Sequence
			fields["signingKeyId"], fields["signature"] = l.SigningKeyID, l.Signature
		}
		must(l.Validate())
		leaves = append(leaves, leafCase{fields, string(l.Encode()), Hex(l.Hash())})
	}
	files["leaf.json"] = vectorFile{"Leaf data is JCS of the leaf members; leafHash = SHA-256(0x00 || leaf data).", leaves}

	type sthCase struct {
		PrivateKeySeed, PublicKey string
		STH                       STH
		SigningBytes              string
	}
	sSeed, sPriv := seedKey(2)
	s := STH{V: TreeHeadVersion, ProjectID: "prj_01JDVECTOR", Stream: StreamEvents, TreeSize: 3,
		RootHash: Hex(LeafHash([]byte("root"))), Timestamp: "2026-11-21T11:00:00.000Z"}
	must(SignSTH(sPriv, &s))
	sb, err := s.SigningBytes()
	must(err)
	files["sth.json"] = vectorFile{"signature = Ed25519 over JCS of the STH without its signature member.",
		[]sthCase{{sSeed, pubHex(sPriv), s, string(sb)}}}

	type receiptCase struct {
		PrivateKeySeed string
		Receipt        Receipt
		SigningBytes   string
	}
	var receipts []receiptCase
	for _, valid := range []bool{true, false} {
		r := Receipt{ReceiptVersion: ReceiptVersion, Stream: StreamProjectAudit, ProjectID: "prj_01JDVECTOR", Valid: valid,
			CheckedCount: 3, TreeSize: 3, RootHash: Hex(LeafHash([]byte("root"))), VerifiedAt: "2026-11-21T11:00:00.000Z"}
		if !valid {
			r.FirstBreak = &ChainBreak{Sequence: 2, Reason: BreakContentTampered, Detail: "payload no longer re-derives its commitment"}
		}
		must(SignReceipt(sPriv, &r))
		rb, err := r.SigningBytes()
		must(err)
		receipts = append(receipts, receiptCase{sSeed, r, string(rb)})
	}
	files["receipt.json"] = vectorFile{"signature = Ed25519 over JCS of the receipt without its signature member (firstBreak null when valid).", receipts}

	type cpCase struct {
		PrivateKeySeed, PublicKey, Origin, VerifierKey string
		Size                                           uint64
		RootHash, Note                                 string
	}
	origin := CheckpointOrigin("sealtrail.example", "prj_01JDVECTOR", StreamEvents)
	root := LeafHash([]byte("root"))
	note, err := SignCheckpoint(sPriv, origin, 3, root)
	must(err)
	vk, err := noteVerifierKey(sPriv, origin)
	must(err)
	files["checkpoint.json"] = vectorFile{"C2SP tlog-checkpoint signed note; origin <serviceOrigin>/<projectId>/<stream> is also the key name.",
		[]cpCase{{sSeed, pubHex(sPriv), origin, vk, 3, Hex(root), string(note)}}}

	type merkleCase struct {
		Leaves    []string // leaf data, hex
		Roots     []string // root of the first n leaves, n = 0..len
		Inclusion []struct {
			Index, Size uint64
			Proof       []string
		}
		Consistency []struct {
			OldSize, NewSize uint64
			Proof            []string
		}
	}
	var mc merkleCase
	var tree MemoryTree
	for i := range 7 {
		d := []byte{byte(i)}
		mc.Leaves = append(mc.Leaves, hex.EncodeToString(d))
		must(tree.AppendLeafHash(LeafHash(d)))
	}
	for n := uint64(0); n <= 7; n++ {
		r, err := tree.Root(n)
		must(err)
		mc.Roots = append(mc.Roots, Hex(r))
		for m := uint64(0); m < n; m++ {
			p, err := ProveInclusion(m, n, &tree)
			must(err)
			mc.Inclusion = append(mc.Inclusion, struct {
				Index, Size uint64
				Proof       []string
			}{m, n, hexes(p)})
		}
		for m := uint64(1); m < n; m++ {
			p, err := ProveConsistency(m, n, &tree)
			must(err)
			mc.Consistency = append(mc.Consistency, struct {
				OldSize, NewSize uint64
				Proof            []string
			}{m, n, hexes(p)})
		}
	}
	files["merkle.json"] = vectorFile{"RFC 6962 roots, inclusion and consistency proofs over the leaf data 0x00..0x06.", mc}
	return files
}

func noteVerifierKey(priv ed25519.PrivateKey, origin string) (string, error) {
	return CheckpointVerifierKey(priv.Public().(ed25519.PublicKey), origin)
}

func hexes(hs []Hash) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = Hex(h)
	}
	return out
}

func TestVectors(t *testing.T) {
	for name, f := range buildVectors(t) {
		got, err := json.MarshalIndent(f, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join(vectorDir, name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./tlog -run TestVectors -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: recomputed vectors differ from the published ones", name)
		}
	}
}

// TestVectorsVerify reads the published files back and checks them with the public API
// only, as a client in another language would.
func TestVectorsVerify(t *testing.T) {
	read := func(name string, v any) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(vectorDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &struct{ Cases any }{v}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var sths []struct {
		PublicKey string
		STH       STH
	}
	read("sth.json", &sths)
	for _, c := range sths {
		pub, err := ParsePublicKey(c.PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifySTH(pub, &c.STH); err != nil {
			t.Errorf("sth.json: %v", err)
		}
	}
	var cps []struct{ PublicKey, Origin, Note string }
	read("checkpoint.json", &cps)
	for _, c := range cps {
		pub, _ := ParsePublicKey(c.PublicKey)
		if _, err := OpenCheckpoint(pub, c.Origin, []byte(c.Note)); err != nil {
			t.Errorf("checkpoint.json: %v", err)
		}
	}
	var jcs []struct{ Input, Canonical, Rejected string }
	read("jcs.json", &jcs)
	for _, c := range jcs {
		got, err := Canonicalize([]byte(c.Input))
		switch {
		case c.Rejected != "" && err == nil:
			t.Errorf("jcs.json: %s accepted as %s, want rejected (%s)", c.Input, got, c.Rejected)
		case c.Rejected == "" && (err != nil || string(got) != c.Canonical):
			t.Errorf("jcs.json: %s gave %s, %v; want %s", c.Input, got, err, c.Canonical)
		}
	}
	if len(sths) == 0 || len(cps) == 0 || len(jcs) == 0 {
		t.Fatal("no vectors read")
	}
}
