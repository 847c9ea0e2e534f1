package tlog

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func testKey(seedByte byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seedByte}, ed25519.SeedSize))
}

func sampleLeaf() Leaf {
	return Leaf{
		ProjectID: "prj_demo", Stream: StreamEvents, Sequence: 42, ID: "evt_01JDEMO0000000000000000000",
		Timestamp: "2026-11-21T10:00:00.123Z", PayloadHash: LeafHash([]byte("p")),
	}
}

func TestLeafEncodingIsCanonical(t *testing.T) {
	for _, signed := range []bool{false, true} {
		l := sampleLeaf()
		if signed {
			l.SigningKeyID = "sk_1"
			l.Signature = SignEvent(testKey(1), l.ID, l.PayloadHash)
		}
		data := l.Encode()
		canon, err := Canonicalize(data)
		if err != nil || !bytes.Equal(canon, data) {
			t.Fatalf("leaf encoding %s is not canonical (%v)", data, err)
		}
		back, err := DecodeLeaf(data)
		if err != nil {
			t.Fatal(err)
		}
		if back != l {
			t.Fatalf("round trip: %+v != %+v", back, l)
		}
	}
}

func TestDecodeLeafRejects(t *testing.T) {
	good := sampleLeaf()
	data := string(good.Encode())
	for name, in := range map[string]string{
		"not canonical":   strings.Replace(data, `{"id"`, `{ "id"`, 1),
		"unknown member":  strings.Replace(data, `"v":1}`, `"v":1,"x":1}`, 1),
		"version 2":       strings.Replace(data, `"v":1}`, `"v":2}`, 1),
		"bad stream":      strings.Replace(data, `"events"`, `"other"`, 1),
		"sequence zero":   strings.Replace(data, `"sequence":42`, `"sequence":0`, 1),
		"bad timestamp":   strings.Replace(data, `.123Z`, `Z`, 1),
		"upper hex":       strings.Replace(data, Hex(good.PayloadHash), strings.ToUpper(Hex(good.PayloadHash)), 1),
		"signature alone": strings.Replace(data, `"sequence":42`, `"sequence":42,"signature":"`+strings.Repeat("ab", 64)+`"`, 1),
		"empty":           "",
		"not json":        "leaf",
	} {
		if _, err := DecodeLeaf([]byte(in)); !errors.Is(err, ErrLeaf) {
			t.Errorf("%s: DecodeLeaf(%q) = %v, want ErrLeaf", name, in, err)
		}
	}
}

func TestEventIDs(t *testing.T) {
	seen := map[string]bool{}
	prev := ""
	for i := range 1000 {
		id, err := NewEventID(time.UnixMilli(int64(1_700_000_000_000 + i)))
		if err != nil {
			t.Fatal(err)
		}
		if !ValidEventID(id) || len(id) != 30 || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		if id <= prev {
			t.Fatalf("ids do not sort by time: %q after %q", id, prev)
		}
		seen[id], prev = true, id
	}
	for _, bad := range []string{"", "evt_", "evt", "xyz_abc", "evt_a b", "evt_a\nb", "evt_" + strings.Repeat("a", 125), "evt_é"} {
		if ValidEventID(bad) {
			t.Errorf("ValidEventID(%q) = true", bad)
		}
	}
}

func TestKeysAndEventSignatures(t *testing.T) {
	pub, priv, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	seedHex := Hex(Hash(priv.Seed()))
	fromSeed, err := ParsePrivateKey(seedHex)
	if err != nil || !fromSeed.Equal(priv) {
		t.Fatalf("seed form: %v", err)
	}
	full := seedHex + Hex(Hash(pub))
	if k, err := ParsePrivateKey(full); err != nil || !k.Equal(priv) {
		t.Fatalf("seed||public form: %v", err)
	}
	wrongPub := seedHex + strings.Repeat("00", 32)
	if _, err := ParsePrivateKey(wrongPub); err == nil {
		t.Fatal("accepted a private key whose public half does not match")
	}
	for _, bad := range []string{"", "zz", strings.ToUpper(seedHex), seedHex[:62]} {
		if _, err := ParsePrivateKey(bad); err == nil {
			t.Errorf("ParsePrivateKey(%q) accepted", bad)
		}
		if _, err := ParsePublicKey(bad); err == nil {
			t.Errorf("ParsePublicKey(%q) accepted", bad)
		}
	}
	ph := LeafHash([]byte("payload"))
	sig := SignEvent(priv, "evt_1", ph)
	if err := VerifyEventSignature(pub, "evt_1", ph, sig); err != nil {
		t.Fatal(err)
	}
	for name, check := range map[string]error{
		"other id":      VerifyEventSignature(pub, "evt_2", ph, sig),
		"other payload": VerifyEventSignature(pub, "evt_1", LeafHash(nil), sig),
		"other key":     VerifyEventSignature(testKey(9).Public().(ed25519.PublicKey), "evt_1", ph, sig),
	} {
		if !errors.Is(check, ErrBadSignature) {
			t.Errorf("%s: %v, want ErrBadSignature", name, check)
		}
	}
	if err := VerifyEventSignature(pub, "evt_1", ph, "nothex"); err == nil || errors.Is(err, ErrBadSignature) {
		t.Errorf("malformed signature: %v", err)
	}
}

func TestSTHAndReceiptSignatures(t *testing.T) {
	priv := testKey(3)
	pub := priv.Public().(ed25519.PublicKey)
	s := STH{V: TreeHeadVersion, ProjectID: "prj_demo", Stream: StreamProjectAudit, TreeSize: 7,
		RootHash: Hex(EmptyRoot), Timestamp: "2026-11-21T10:00:00.000Z"}
	if err := SignSTH(priv, &s); err != nil {
		t.Fatal(err)
	}
	if err := VerifySTH(pub, &s); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*STH){
		"size":      func(s *STH) { s.TreeSize++ },
		"root":      func(s *STH) { s.RootHash = Hex(LeafHash(nil)) },
		"stream":    func(s *STH) { s.Stream = StreamEvents },
		"project":   func(s *STH) { s.ProjectID = "prj_other" },
		"timestamp": func(s *STH) { s.Timestamp = "2026-11-21T10:00:00.001Z" },
	} {
		c := s
		mutate(&c)
		if err := VerifySTH(pub, &c); !errors.Is(err, ErrBadSignature) {
			t.Errorf("STH with changed %s: %v", name, err)
		}
	}
	if err := VerifySTH(testKey(4).Public().(ed25519.PublicKey), &s); !errors.Is(err, ErrBadSignature) {
		t.Errorf("STH under another key: %v", err)
	}

	r := Receipt{ReceiptVersion: ReceiptVersion, Stream: StreamEvents, ProjectID: "prj_demo", Valid: false,
		CheckedCount: 3, TreeSize: 7, RootHash: Hex(EmptyRoot),
		FirstBreak: &ChainBreak{Sequence: 4, Reason: BreakLeafMismatch, Detail: "x"}, VerifiedAt: "2026-11-21T10:00:00.000Z"}
	if err := SignReceipt(priv, &r); err != nil {
		t.Fatal(err)
	}
	if err := VerifyReceipt(pub, &r); err != nil {
		t.Fatal(err)
	}
	c := r
	c.FirstBreak = &ChainBreak{Sequence: 5, Reason: BreakLeafMismatch, Detail: "x"}
	if err := VerifyReceipt(pub, &c); !errors.Is(err, ErrBadSignature) {
		t.Errorf("receipt with changed break: %v", err)
	}
	if err := VerifyReceipt(testKey(4).Public().(ed25519.PublicKey), &r); err == nil {
		t.Error("receipt verified under a key other than its servicePublicKey")
	}
	c = r
	c.Valid = true
	if err := VerifyReceipt(pub, &c); err == nil {
		t.Error("receipt valid with a firstBreak verified")
	}
}

func TestCheckpointNotes(t *testing.T) {
	priv := testKey(5)
	pub := priv.Public().(ed25519.PublicKey)
	origin := CheckpointOrigin("sealtrail.example", "prj_demo", StreamEvents)
	root := LeafHash([]byte("r"))
	msg, err := SignCheckpoint(priv, origin, 1234, root)
	if err != nil {
		t.Fatal(err)
	}
	c, err := OpenCheckpoint(pub, origin, msg)
	if err != nil {
		t.Fatal(err)
	}
	if c.Size != 1234 || c.Root != root || c.Origin != origin {
		t.Fatalf("opened %+v", c)
	}
	if _, err := OpenCheckpoint(pub, CheckpointOrigin("sealtrail.example", "prj_other", StreamEvents), msg); err == nil {
		t.Error("opened under another origin")
	}
	if _, err := OpenCheckpoint(testKey(6).Public().(ed25519.PublicKey), origin, msg); err == nil {
		t.Error("opened under another key")
	}
	tampered := bytes.Replace(msg, []byte("1234"), []byte("1235"), 1)
	if _, err := OpenCheckpoint(pub, origin, tampered); err == nil {
		t.Error("opened a tampered note")
	}
	for _, bad := range []string{"", "o\n", "o\n12\n", "o\n012\nAAAA\n", "o\n1\nnot base64\n", "\n1\n" + strings.Repeat("A", 43) + "=\n"} {
		if _, err := ParseCheckpoint([]byte(bad)); !errors.Is(err, ErrCheckpoint) {
			t.Errorf("ParseCheckpoint(%q) = %v", bad, err)
		}
	}
}

func FuzzDecodeLeaf(f *testing.F) {
	l := sampleLeaf()
	f.Add(l.Encode())
	l.SigningKeyID, l.Signature = "sk_1", strings.Repeat("ab", 64)
	f.Add(l.Encode())
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := DecodeLeaf(data)
		if err != nil {
			if !errors.Is(err, ErrLeaf) {
				t.Fatalf("error %v does not wrap ErrLeaf", err)
			}
			return
		}
		if !bytes.Equal(got.Encode(), data) {
			t.Fatalf("accepted leaf %q re-encodes differently", data)
		}
	})
}

func FuzzOpenCheckpoint(f *testing.F) {
	priv := testKey(5)
	pub := priv.Public().(ed25519.PublicKey)
	origin := "sealtrail.example/prj_demo/events"
	msg, _ := SignCheckpoint(priv, origin, 99, LeafHash(nil))
	f.Add(msg)
	f.Add([]byte("sealtrail.example/prj_demo/events\n1\nAAAA\n\n— x y\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := OpenCheckpoint(pub, origin, data)
		if err == nil {
			// Only a note carrying our signature may open; re-signing its body must
			// reproduce the body exactly.
			again, _ := SignCheckpoint(priv, origin, c.Size, c.Root)
			if !bytes.HasPrefix(data, again[:bytes.Index(again, []byte("\n\n"))]) {
				t.Fatalf("opened a note whose body is not what we sign: %q", data)
			}
		}
		_, _ = ParseCheckpoint(data)
	})
}

// parseTimeByLayout is ParseTime as it was first written: time.Parse, then a round
// trip through Format. FuzzParseTime holds the fast parser to it.
func parseTimeByLayout(s string) (time.Time, error) {
	t, err := time.Parse(TimeLayout, s)
	if err != nil || t.Format(TimeLayout) != s {
		return time.Time{}, fmt.Errorf("timestamp %q is not RFC 3339 UTC with milliseconds", s)
	}
	return t, nil
}

func FuzzParseTime(f *testing.F) {
	for _, s := range []string{
		"2026-11-21T10:00:00.123Z", "2024-02-29T23:59:59.999Z", "2026-02-29T00:00:00.000Z",
		"2026-13-01T00:00:00.000Z", "2026-00-10T00:00:00.000Z", "2026-04-31T00:00:00.000Z",
		"2026-11-21T24:00:00.000Z", "2026-11-21T10:60:00.000Z", "2026-11-21T10:00:60.000Z",
		"0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", "2026-11-21T10:00:00.12Z",
		"2026-11-21T10:00:00.1234Z", "2026-11-21T10:00:00.123+00:00", "2026-11-21 10:00:00.123Z",
		"2026-11-21T10:00:00Z", "+026-11-21T10:00:00.123Z", "2026-11-21T10:00:00.12aZ", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseTime(s)
		want, werr := parseTimeByLayout(s)
		if (err == nil) != (werr == nil) || !got.Equal(want) {
			t.Fatalf("ParseTime(%q) = %v, %v; by layout %v, %v", s, got, err, want, werr)
		}
		if err == nil && FormatTime(got) != s {
			t.Fatalf("FormatTime(ParseTime(%q)) = %q", s, FormatTime(got))
		}
	})
}

// FuzzFormatUnixMilli holds FormatUnixMilli to FormatTime, and to ParseTime's verdict
// on the years it refuses.
func FuzzFormatUnixMilli(f *testing.F) {
	year := func(y int) int64 { return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() }
	for _, ms := range []int64{0, -1, 1, 86_399_999, 86_400_000, -86_400_000, -86_400_001,
		year(0), year(0) - 1, year(10000), year(10000) - 1, year(2000) + 59*86_400_000, year(1900) + 59*86_400_000,
		year(2100) + 59*86_400_000, year(1600) + 59*86_400_000, 1_795_876_555_201, 1 << 62, -(1 << 62)} {
		f.Add(ms)
	}
	f.Fuzz(func(t *testing.T, ms int64) {
		got, ok := FormatUnixMilli(ms)
		tm := time.UnixMilli(ms).UTC()
		if wantOK := tm.Year() >= 0 && tm.Year() <= 9999; ok != wantOK {
			t.Fatalf("FormatUnixMilli(%d) ok %v, year %d", ms, ok, tm.Year())
		}
		if !ok {
			return
		}
		if want := FormatTime(tm); got != want {
			t.Fatalf("FormatUnixMilli(%d) = %q, FormatTime %q", ms, got, want)
		}
		if back, err := ParseTime(got); err != nil || back.UnixMilli() != ms {
			t.Fatalf("ParseTime(%q) = %v, %v", got, back, err)
		}
	})
}

func TestFormatUnixMilliDays(t *testing.T) {
	// Every day of years 0-9999 (and a millisecond either side of the range).
	start := time.Date(0, 1, 1, 23, 59, 59, 999_000_000, time.UTC)
	for d := start; d.Year() <= 9999; d = d.AddDate(0, 0, 1) {
		if got, ok := FormatUnixMilli(d.UnixMilli()); !ok || got != FormatTime(d) {
			t.Fatalf("%v: FormatUnixMilli %q, %v", d, got, ok)
		}
	}
	if _, ok := FormatUnixMilli(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli() - 1); ok {
		t.Error("a millisecond before year 0 formatted")
	}
	if _, ok := FormatUnixMilli(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()); ok {
		t.Error("year 10000 formatted")
	}
}

func BenchmarkParseTime(b *testing.B) {
	const s = "2026-11-21T10:00:00.123Z"
	for _, c := range []struct {
		name  string
		parse func(string) (time.Time, error)
	}{{"fixed", ParseTime}, {"layout", parseTimeByLayout}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := c.parse(s); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
