package tlog

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
)

func testDigest(t *testing.T) (*Digest, string, []byte) {
	t.Helper()
	pub, priv, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	var heads []STH
	for i, s := range []string{StreamEvents, StreamProjectAudit} {
		h := STH{V: TreeHeadVersion, ProjectID: "prj_x", Stream: s, TreeSize: uint64(10 + i),
			RootHash: strings.Repeat("ab", 32), Timestamp: "2026-11-24T10:00:00.000Z"}
		if err := SignSTH(priv, &h); err != nil {
			t.Fatal(err)
		}
		heads = append(heads, h)
	}
	d := &Digest{Origin: DigestOrigin("sealtrail.test", "prj_x"), ProjectID: "prj_x", Name: "Ünïcode \"name\"\n",
		Period: "daily 2026-11-24", Issued: "2026-11-24T10:00:00.000Z", Previous: "2026-11-23T10:00:00.000Z",
		Heads: heads,
		Anchors: []DigestAnchor{{Stream: StreamEvents},
			{Stream: StreamProjectAudit, TreeSize: 9, RootHash: strings.Repeat("cd", 32), AnchoredAt: "2026-11-24T09:00:00.000Z", Type: "rekor", Ref: "log index 7 \"q\""}},
		Counts: []DigestCount{{StreamEvents, 4}, {StreamProjectAudit, 1}},
		Holds:  []DigestHold{{ID: "hold_1", MembershipRoot: strings.Repeat("ef", 32), Events: 3, CreatedAt: "2026-11-20T00:00:00.000Z"}},
	}
	signed, err := SignDigest(priv, d)
	if err != nil {
		t.Fatal(err)
	}
	return d, DigestText(d, signed), pub
}

func TestDigestRoundTrip(t *testing.T) {
	d, text, pub := testDigest(t)
	got, err := VerifyDigestText(pub, text)
	if err != nil {
		t.Fatal(err)
	}
	if got.Marshal() != d.Marshal() || got.Name != d.Name || got.Anchors[1].Ref != d.Anchors[1].Ref {
		t.Fatalf("facts changed in the round trip:\n%s\nwant\n%s", got.Marshal(), d.Marshal())
	}
	if _, err := VerifyDigestText(pub, strings.ReplaceAll(text, "\n", "\r\n")+"\r\n"); err != nil {
		t.Fatalf("CRLF line ends, as mail carries them: %v", err)
	}
}

func TestDigestTampered(t *testing.T) {
	_, text, pub := testDigest(t)
	other, _, _ := GenerateKey()
	cases := []struct {
		name string
		text string
		pub  []byte
		want error
	}{
		{"count edited in the text", strings.Replace(text, "4 added", "0 added", 1), pub, ErrDigestEdited},
		{"anchor edited in the text", strings.Replace(text, "not yet anchored", "anchored", 1), pub, ErrDigestEdited},
		{"line added", strings.Replace(text, "Active legal holds\n", "Active legal holds\n  none\n", 1), pub, ErrDigestEdited},
		{"count edited in the note", strings.Replace(text, "count events 4", "count events 5", 1), pub, ErrBadSignature},
		{"another key", text, other, ErrBadSignature},
		{"markers removed", strings.Replace(text, "-----BEGIN", "", 1), pub, ErrDigestMalformed},
		{"empty", "", pub, ErrDigestMalformed},
		{"note garbage", digestBegin + "x\n\n— y z\n" + digestEnd, pub, ErrDigestMalformed},
		{"no signature", digestBegin + "x\n" + digestEnd, pub, ErrDigestMalformed},
	}
	for _, c := range cases {
		if _, err := VerifyDigestText(c.pub, c.text); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestParseDigestStrict(t *testing.T) {
	d, _, _ := testDigest(t)
	good := d.Marshal()
	if _, err := parseDigest(good); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		strings.Replace(good, "count events 4", "count events four", 1),
		strings.Replace(good, "count events 4", "count  events 4", 1),
		strings.Replace(good, DigestVersion, "sealtrail digest v2", 1),
		good + "extra line\n",
		strings.Replace(good, "previous ", "prev ", 1),
	} {
		if _, err := parseDigest(bad); err == nil {
			t.Errorf("parsed a malformed note:\n%s", bad)
		}
	}
}

// FuzzVerifyDigestText: hostile text never panics the verifier, and only text that
// is exactly the rendering of a note signed by the key verifies.
func FuzzVerifyDigestText(f *testing.F) {
	priv := testKey(7)
	pub := priv.Public().(ed25519.PublicKey)
	h := STH{V: TreeHeadVersion, ProjectID: "prj_f", Stream: StreamEvents, TreeSize: 1, RootHash: strings.Repeat("00", 32),
		Timestamp: "2026-11-24T00:00:00.000Z"}
	if err := SignSTH(priv, &h); err != nil {
		f.Fatal(err)
	}
	d := &Digest{Origin: DigestOrigin("fuzz.test", "prj_f"), ProjectID: "prj_f", Name: "f", Period: "daily 2026-11-24",
		Issued: "2026-11-24T00:00:00.000Z", Heads: []STH{h}, Anchors: []DigestAnchor{{Stream: StreamEvents}},
		Counts: []DigestCount{{StreamEvents, 1}}, Holds: []DigestHold{{ID: "h", MembershipRoot: "ab", Events: 1, CreatedAt: "x"}}}
	signed, err := SignDigest(priv, d)
	if err != nil {
		f.Fatal(err)
	}
	good := DigestText(d, signed)
	f.Add(good)
	f.Add(strings.Replace(good, "1 added", "2 added", 1))
	f.Add(digestBegin + "x\n" + digestEnd)
	f.Add(digestBegin + d.Marshal() + "\n— fuzz.test/prj_f/digest AAAAAAAA\n" + digestEnd)
	f.Fuzz(func(t *testing.T, text string) {
		got, err := VerifyDigestText(pub, text)
		if err != nil {
			return
		}
		text = strings.ReplaceAll(text, "\r\n", "\n")
		start := strings.Index(text, digestBegin)
		again := DigestText(&got, []byte(text[start+len(digestBegin):strings.LastIndex(text, digestEnd)]))
		if strings.TrimRight(text, "\n") != strings.TrimRight(again, "\n") {
			t.Fatalf("verified a text that is not its facts' rendering: %q", text)
		}
	})
}
