package anchor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// A publisher's answer for a checkpoint is kept in the object store as well as in
// memory, under keptKey, before the anchors are recorded: a job that published but
// did not record them (a catalog error, a crash, a restart, another replica taking
// the lease) reuses it, rather than publishing the same checkpoint again, which a
// Rekor log refuses with 409 and no proof. Only a crash between the publisher's answer
// and this write still loses it (docs/anchoring.md "Publishers").

// keptAttestation is the stored form of an attestation.
type keptAttestation struct {
	Ref   string          `json:"anchorRef"`
	Proof json.RawMessage `json:"proof"`
	At    string          `json:"at,omitempty"` // RFC 3339: the time the party attests
}

// keptKey names the answer of publisher i (of type typ) for checkpoint note: under the
// tree_heads prefix, beside its tiles, by the note's SHA-256.
func keptKey(note []byte, i int, typ string) string {
	h := sha256.Sum256(note)
	return string(Prefix) + "attestation/" + hex.EncodeToString(h[:]) + "/" + strconv.Itoa(i) + "-" + typ
}

// loadKept returns the kept answer of publisher i for note; ok is false when none is
// kept.
func (j *Job) loadKept(ctx context.Context, note []byte, i int, typ string) (a attestation, ok bool, err error) {
	raw, err := j.cfg.Store.Get(ctx, keptKey(note, i, typ))
	if errors.Is(err, tiles.ErrNotFound) {
		return attestation{}, false, nil
	}
	if err != nil {
		return attestation{}, false, fmt.Errorf("anchor: read kept %s attestation: %w", typ, err)
	}
	a, err = decodeKept(raw, typ)
	if err != nil {
		return attestation{}, false, fmt.Errorf("anchor: kept %s attestation %s: %w", typ, keptKey(note, i, typ), err)
	}
	return a, true, nil
}

// keep stores a, publisher i's answer for note. If another job kept an answer first
// (two replicas raced for the lease), that one is returned, to be used instead.
func (j *Job) keep(ctx context.Context, note []byte, i int, a attestation) (attestation, error) {
	k := keptAttestation{Ref: a.ext.AnchorRef, Proof: a.ext.Proof}
	if !a.at.IsZero() {
		k.At = a.at.UTC().Format(time.RFC3339Nano)
	}
	raw, err := json.Marshal(k)
	if err != nil {
		return a, fmt.Errorf("anchor: encode attestation: %w", err)
	}
	key := keptKey(note, i, a.ext.AnchorType)
	err = j.cfg.Store.Create(ctx, key, raw, tiles.Attrs{ContentType: "application/json"})
	var conflict *tiles.ConflictError
	if errors.As(err, &conflict) {
		if first, ok, lerr := j.loadKept(ctx, note, i, a.ext.AnchorType); lerr == nil && ok {
			return first, nil
		}
	}
	if err != nil {
		return a, fmt.Errorf("anchor: keep %s attestation: %w", a.ext.AnchorType, err)
	}
	return a, nil
}

func decodeKept(raw []byte, typ string) (attestation, error) {
	var k keptAttestation
	if err := json.Unmarshal(raw, &k); err != nil {
		return attestation{}, err
	}
	if k.Ref == "" || len(k.Proof) == 0 {
		return attestation{}, errors.New("no reference or proof")
	}
	a := attestation{ext: tlog.ExternalProof{AnchorType: typ, AnchorRef: k.Ref, Proof: k.Proof}}
	if k.At != "" {
		t, err := time.Parse(time.RFC3339Nano, k.At)
		if err != nil {
			return attestation{}, fmt.Errorf("at: %w", err)
		}
		a.at = t
		a.ext.AnchoredAt = tlog.FormatTime(t)
	}
	return a, nil
}
