package tlog

import (
	"crypto/ed25519"
	"fmt"
	"strings"
	"testing"
)

// typicalEvent is a realistic payload of about 1 KB.
func typicalEvent() []byte {
	return fmt.Appendf(nil, `{"action":"document.export","actor":{"type":"user","id":"usr_8f2c41","display":"Ada Lovelace"},`+
		`"status":"success","target":{"type":"document","id":"doc_77a1","display":"Q3 board deck"},"risk":"medium",`+
		`"requestId":"req_0c9e","sessionId":"ses_4411","ipAddress":"203.0.113.7","userAgent":"Mozilla/5.0 (X11; Linux x86_64)",`+
		`"agentId":"agt_writer","model":"model-x","toolName":"export_pdf","toolCallId":"call_123",`+
		`"context":{"tenant":"acme","region":"eu-west-1","feature_flags":["a","b","c"],"path":"/v2/documents/doc_77a1/export"},`+
		`"metadata":{"pages":42,"format":"pdf","watermark":true,"note":%q}}`, strings.Repeat("x", 420))
}

func BenchmarkLeafHash(b *testing.B) {
	l := sampleLeaf()
	l.SigningKeyID, l.Signature = "sk_1", strings.Repeat("ab", 64)
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Hash()
	}
}

func BenchmarkCommitment1KB(b *testing.B) {
	p := typicalEvent()
	n := nonceOf(1)
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := CommitPayload(n, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCanonicalize1KB(b *testing.B) {
	p := typicalEvent()
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonicalize(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEventSign(b *testing.B) {
	priv := testKey(1)
	ph := LeafHash(nil)
	for b.Loop() {
		_ = SignEvent(priv, "evt_01JD0000000000000000000000", ph)
	}
}

func BenchmarkEventVerify(b *testing.B) {
	priv := testKey(1)
	pub := priv.Public().(ed25519.PublicKey)
	ph := LeafHash(nil)
	sig := SignEvent(priv, "evt_01JD0000000000000000000000", ph)
	for b.Loop() {
		if err := VerifyEventSignature(pub, "evt_01JD0000000000000000000000", ph, sig); err != nil {
			b.Fatal(err)
		}
	}
}

func benchSTH() STH {
	return STH{V: TreeHeadVersion, ProjectID: "prj_demo", Stream: StreamEvents, TreeSize: 123456,
		RootHash: Hex(EmptyRoot), Timestamp: "2026-11-21T10:00:00.000Z"}
}

func BenchmarkSTHSign(b *testing.B) {
	priv := testKey(1)
	s := benchSTH()
	for b.Loop() {
		if err := SignSTH(priv, &s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSTHVerify(b *testing.B) {
	priv := testKey(1)
	pub := priv.Public().(ed25519.PublicKey)
	s := benchSTH()
	if err := SignSTH(priv, &s); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := VerifySTH(pub, &s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRebuildRecord(b *testing.B) {
	recs := makeRecords(b, 1000, testKey(7))
	lines := make([][]byte, len(recs))
	for i := range recs {
		lines[i], _ = EncodeStoredEvent(&recs[i])
	}
	b.ReportAllocs()
	var rb *Rebuilder
	for i := 0; b.Loop(); i++ {
		if i%len(lines) == 0 {
			rb = NewRebuilder(RebuildOptions{})
		}
		r, err := DecodeExportLine(lines[i%len(lines)])
		if err != nil {
			b.Fatal(err)
		}
		if err := rb.Add(&r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCanonicalizeWideObject reports the cost per member of objects of 1,000 and
// 40,000 members: flat when canonicalization is linear (n log n for the sort), growing
// with n when it is not.
func BenchmarkCanonicalizeWideObject(b *testing.B) {
	for _, n := range []int{1_000, 40_000} {
		in := wideObject(n)
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				if _, err := Canonicalize(in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/member")
		})
	}
}

// BenchmarkDecodeExportLineWide is the read side of a 40,000-member metadata object:
// the offline verifier decoding its export line (Canonicalize and the payload rebuild).
func BenchmarkDecodeExportLineWide(b *testing.B) {
	payload := append([]byte(`{"action":"a","actor":{"type":"u","id":"1"},"metadata":`), wideObject(40_000)...)
	payload = append(payload, '}')
	n := nonceOf(3)
	canon, commitment, err := CommitPayload(n, payload)
	if err != nil {
		b.Fatal(err)
	}
	l := Leaf{ProjectID: "prj_demo", Stream: StreamEvents, Sequence: 1, ID: "evt_000001",
		Timestamp: "2026-11-21T10:00:00.000Z", PayloadHash: commitment}
	line, err := EncodeStoredEvent(&Record{Leaf: l, LeafHash: l.Hash(), Payload: canon, Nonce: &n})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		if _, err := DecodeExportLine(line); err != nil {
			b.Fatal(err)
		}
	}
}
