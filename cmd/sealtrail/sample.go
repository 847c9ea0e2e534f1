package main

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/sealtrail/sealtrail/tlog"
)

// This file builds deterministic sample logs: the committed fixtures in
// testdata/vectors/export, the selfcheck's log and the benchmark's export all come from
// here. Every key, nonce, id, timestamp and choice is derived from the config's seed with
// SHA-256, and Ed25519 signatures are deterministic, so a config always yields the same
// bytes, on any machine and Go version.

// sampleSigningKeyID is the signingKeyId of the sample customer key.
const sampleSigningKeyID = "sk_sample"

// sampleConfig tells the story of one sample project-stream: the customer registered a
// signing key at SignFrom and revoked it after SignThrough (so only that range is
// signed), and retention shredded sequences 1..ShredThrough except those under a legal
// hold.
type sampleConfig struct {
	Seed         string // everything derives from it
	ProjectID    string
	Stream       string // as written in leaves: tlog.StreamEvents or tlog.StreamProjectAudit
	Events       uint64
	SignFrom     uint64 // first signed sequence; 0 for none
	SignThrough  uint64 // last signed sequence
	ShredThrough uint64 // sequences up to this one are shredded...
	Held         []uint64
	Start        time.Time // receive time of the first event
}

// derive returns 32 bytes determined by the seed, a label and a counter.
func derive(seed, label string, i uint64) [32]byte {
	return sha256.Sum256([]byte(seed + "\x00" + label + "\x00" + strconv.FormatUint(i, 10)))
}

// keyFromSeed returns the Ed25519 key of a label under seed.
func keyFromSeed(seed, label string) ed25519.PrivateKey {
	s := derive(seed, label, 0)
	return ed25519.NewKeyFromSeed(s[:])
}

func (c *sampleConfig) customerKey() ed25519.PrivateKey {
	return keyFromSeed(c.Seed, "customer signing key")
}
func (c *sampleConfig) serviceKey() ed25519.PrivateKey { return keyFromSeed(c.Seed, "service key") }

// forgerKey is the key a tamperer signs with: a well-formed signature by the wrong key.
func (c *sampleConfig) forgerKey() ed25519.PrivateKey { return keyFromSeed(c.Seed, "forger key") }

func (c *sampleConfig) signed(seq uint64) bool {
	return c.SignFrom != 0 && seq >= c.SignFrom && seq <= c.SignThrough
}

func (c *sampleConfig) shredded(seq uint64) bool {
	return seq <= c.ShredThrough && !slices.Contains(c.Held, seq)
}

// sampleGen produces a config's records in sequence order.
type sampleGen struct {
	c        *sampleConfig
	customer ed25519.PrivateKey
	seq      uint64    // last sequence produced
	ts       time.Time // its receive time
	roots    *tlog.RootBuilder
	counts   sampleCounts
}

// sampleCounts counts what a generator produced.
type sampleCounts struct {
	Events   uint64 `json:"events"`
	Signed   uint64 `json:"signed"`
	Unsigned uint64 `json:"unsigned"`
	Shredded uint64 `json:"shredded"`
}

func newSampleGen(c *sampleConfig) *sampleGen {
	return &sampleGen{c: c, customer: c.customerKey(), ts: c.Start, roots: tlog.NewRootBuilder()}
}

// next returns the next record, or ok false after the last one.
func (g *sampleGen) next() (rec tlog.Record, ok bool, err error) {
	if g.seq >= g.c.Events {
		return tlog.Record{}, false, nil
	}
	g.seq++
	seq := g.seq
	r := derive(g.c.Seed, "event", seq)
	if seq > 1 {
		g.ts = g.ts.Add(time.Duration(1+binary.BigEndian.Uint32(r[28:])%90_000) * time.Millisecond)
	}
	signed := g.c.signed(seq)
	raw, err := json.Marshal(samplePayload(r, signed))
	if err != nil {
		return tlog.Record{}, false, fmt.Errorf("sample payload %d: %w", seq, err)
	}
	nonce := tlog.Nonce(derive(g.c.Seed, "nonce", seq))
	canon, commitment, err := tlog.CommitPayload(nonce, raw)
	if err != nil {
		return tlog.Record{}, false, fmt.Errorf("sample payload %d: %w", seq, err)
	}
	// A signed event's id is minted by the client a little before the service receives it.
	idTime := g.ts
	if signed {
		idTime = idTime.Add(-time.Duration(r[27]) * time.Millisecond)
	}
	idRand := derive(g.c.Seed, "id", seq)
	rec = tlog.Record{
		Leaf: tlog.Leaf{
			ProjectID:   g.c.ProjectID,
			Stream:      g.c.Stream,
			Sequence:    seq,
			ID:          sampleEventID(idTime, idRand[:10]),
			Timestamp:   tlog.FormatTime(g.ts),
			PayloadHash: commitment,
		},
		Payload: canon,
		Nonce:   &nonce,
	}
	ct := derive(g.c.Seed, "ciphertext", seq)
	rec.CiphertextHash = hex.EncodeToString(ct[:])
	g.counts.Events++
	if signed {
		rec.Leaf.SigningKeyID = sampleSigningKeyID
		rec.Leaf.Signature = tlog.SignEvent(g.customer, rec.Leaf.ID, commitment)
		g.counts.Signed++
	} else {
		g.counts.Unsigned++
	}
	rec.LeafHash = rec.Leaf.Hash()
	if g.c.shredded(seq) {
		rec.Payload, rec.Nonce = nil, nil
		g.counts.Shredded++
	}
	g.roots.Append(rec.LeafHash)
	return rec, true, nil
}

// sampleEventID renders an event id the way tlog.NewEventID does (48 bits of
// milliseconds, then 80 bits), with the 80 bits given instead of random.
func sampleEventID(t time.Time, rnd []byte) string {
	const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(t.UnixMilli())<<16)
	copy(b[6:], rnd[:10])
	hi, lo := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return tlog.EventIDPrefix + string(out[:])
}

// sampleReader is an io.Reader over a config's export: one stored event per line, made
// on demand, so an export of any length costs no memory.
type sampleReader struct {
	g   *sampleGen
	buf []byte
	// onLine, when set, is called after each line is produced, with its sequence.
	onLine func(seq uint64)
}

func newSampleReader(c *sampleConfig) *sampleReader { return &sampleReader{g: newSampleGen(c)} }

func (s *sampleReader) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		rec, ok, err := s.g.next()
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, io.EOF
		}
		line, err := tlog.EncodeStoredEvent(&rec)
		if err != nil {
			return 0, fmt.Errorf("sample line %d: %w", rec.Leaf.Sequence, err)
		}
		s.buf = append(line, '\n')
		if s.onLine != nil {
			s.onLine(rec.Leaf.Sequence)
		}
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// sampleLines returns a config's export as lines without newlines, its counts and its
// root. It holds the whole log: for small configs only.
func sampleLines(c *sampleConfig) (lines [][]byte, counts sampleCounts, root tlog.Hash, err error) {
	g := newSampleGen(c)
	for {
		rec, ok, err := g.next()
		if err != nil {
			return nil, sampleCounts{}, tlog.Hash{}, err
		}
		if !ok {
			return lines, g.counts, g.roots.Root(), nil
		}
		line, err := tlog.EncodeStoredEvent(&rec)
		if err != nil {
			return nil, sampleCounts{}, tlog.Hash{}, fmt.Errorf("sample line %d: %w", rec.Leaf.Sequence, err)
		}
		lines = append(lines, line)
	}
}

// joinLines renders lines as an export: each line followed by a newline.
func joinLines(lines [][]byte) []byte {
	var out []byte
	for _, l := range lines {
		out = append(out, l...)
		out = append(out, '\n')
	}
	return out
}

// sampleSTH returns the /root response for the whole sample log, signed by the sample
// service key at a fixed time.
func sampleSTH(c *sampleConfig, size uint64, root tlog.Hash, at time.Time) (*rootResponse, error) {
	sth := tlog.STH{V: tlog.TreeHeadVersion, ProjectID: c.ProjectID, Stream: c.Stream, TreeSize: size,
		RootHash: tlog.Hex(root), Timestamp: tlog.FormatTime(at)}
	priv := c.serviceKey()
	if err := tlog.SignSTH(priv, &sth); err != nil {
		return nil, fmt.Errorf("sign sample tree head: %w", err)
	}
	return &rootResponse{STH: sth, ServicePublicKey: hex.EncodeToString(priv.Public().(ed25519.PublicKey))}, nil
}

// rootResponse is the body of GET /api/v1/root.
type rootResponse struct {
	STH              tlog.STH `json:"sth"`
	ServicePublicKey string   `json:"servicePublicKey"`
}
