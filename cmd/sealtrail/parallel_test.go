package main

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/sealtrail/sealtrail/tlog"
)

// sequentialRebuild is the reference the parallel rebuild must agree with: one line at
// a time, decoded and added on one goroutine with tlog.Rebuilder.Add.
func sequentialRebuild(r io.Reader, keys []ed25519.PublicKey) (size uint64, root tlog.Hash, stats tlog.RebuildStats, err error) {
	var sk func(string) []ed25519.PublicKey
	if len(keys) > 0 {
		sk = func(string) []ed25519.PublicKey { return keys }
	}
	rb := tlog.NewRebuilder(tlog.RebuildOptions{SigningKeys: sk})
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, maxLineSize)
	line := 0
	for sc.Scan() {
		line++
		rec, err := tlog.DecodeExportLine(sc.Bytes())
		if err != nil {
			return rb.Size(), rb.Root(), rb.Stats, fmt.Errorf("line %d: %w", line, err)
		}
		if err := rb.Add(&rec); err != nil {
			var cb *tlog.ChainBreak
			if errors.As(err, &cb) {
				return rb.Size(), rb.Root(), rb.Stats, err
			}
			return rb.Size(), rb.Root(), rb.Stats, fmt.Errorf("line %d: %w", line, err)
		}
	}
	return rb.Size(), rb.Root(), rb.Stats, nil
}

// sameAsSequential requires rebuildExport of data to report what sequentialRebuild
// does: the same error (the same first break, or the same line), size, counts and root.
func sameAsSequential(t *testing.T, what string, data []byte, keys []ed25519.PublicKey) {
	t.Helper()
	size, root, stats, wantErr := sequentialRebuild(bytes.NewReader(data), keys)
	res, err := rebuildExport(bytes.NewReader(data), fullOptions{keys: keys})
	if fmt.Sprint(err) != fmt.Sprint(wantErr) {
		t.Fatalf("%s: parallel error %v, sequential %v", what, err, wantErr)
	}
	if res.Size != size || res.Stats != stats || (wantErr == nil && res.Root != root) {
		t.Fatalf("%s: parallel size %d stats %+v root %x; sequential %d %+v %x", what, res.Size, res.Stats, res.Root, size, stats, root)
	}
}

// TestParallelMatchesSequential: the committed sample and each tampered variant
// (testdata/vectors/export) give the same result as the one-goroutine rebuild, and so
// do exports with two forgeries in different batches, where only the first may be
// reported however the workers race.
func TestParallelMatchesSequential(t *testing.T) {
	m := loadManifest(t)
	pub, err := hex.DecodeString(m.SigningPublicKey)
	if err != nil {
		t.Fatal(err)
	}
	keys := []ed25519.PublicKey{pub}
	files := []string{m.Export}
	for _, tc := range m.Tampered {
		files = append(files, tc.File)
	}
	for _, f := range files {
		data, err := os.ReadFile(fixture(f))
		if err != nil {
			t.Fatal(err)
		}
		sameAsSequential(t, f, data, keys)
		sameAsSequential(t, f+" without keys", data, nil)
	}

	c := selfcheckConfig
	c.Events = 6 * batchLines
	c.SignFrom, c.SignThrough, c.ShredThrough = 4*batchLines+1, c.Events, batchLines
	lines, _, _, err := sampleLines(&c)
	if err != nil {
		t.Fatal(err)
	}
	key := []ed25519.PublicKey{c.customerKey().Public().(ed25519.PublicKey)}
	sameAsSequential(t, "clean", joinLines(lines), key)
	ran := 0
	for _, first := range tampers {
		for _, second := range tampers {
			at1, at2 := uint64(2*batchLines+5), uint64(5*batchLines-1) // unsigned, signed
			if first.Name == "sequence-gap" {
				at2-- // the lines after a deleted one move up by one
			}
			forged, _, err := applyTamper(&c, lines, first, at1)
			if err != nil {
				continue // the forgery does not apply to that line (signed or not)
			}
			forged, _, err = applyTamper(&c, forged, second, at2)
			if err != nil {
				continue
			}
			sameAsSequential(t, first.Name+" then "+second.Name, joinLines(forged), key)
			ran++
		}
	}
	if ran < 9 {
		t.Fatalf("only %d pairs of forgeries applied", ran)
	}
	bad := append([][]byte{}, lines...)
	bad[4*batchLines] = []byte(`{"sequence":` + strconv.Itoa(4*batchLines+1) + `}`)
	sameAsSequential(t, "malformed line", joinLines(bad), key)
}
