package anchor

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// anchor publishes the checkpoint of st when some heads in it have no anchor yet, and
// records every such head's anchor proof. It returns the number of heads anchored. If
// no publisher succeeds nothing is recorded, and the next run tries again with the
// checkpoint of that time, which covers these heads too.
func (j *Job) anchor(ctx context.Context, st catalog.TreeHeadsLog) (int, error) {
	if len(j.cfg.Publishers) == 0 || st.Size == 0 {
		return 0, nil
	}
	first, err := j.cfg.Catalog.UnanchoredTreeHeads(ctx, 0, st.Size, 1)
	if err != nil || len(first) == 0 {
		return 0, err
	}
	note, err := j.checkpoint(st)
	if err != nil {
		return 0, err
	}
	ext, at, err := j.attest(ctx, note, st.Size)
	if err != nil {
		return 0, err
	}
	rd := tiles.NewReader(j.cfg.Store, Prefix, tiles.Tree{Size: st.Size, Root: st.Root}, j.cache)
	n := 0
	for from := first[0].Index; ; {
		page, err := j.cfg.Catalog.UnanchoredTreeHeads(ctx, from, st.Size, pageSize)
		if err != nil {
			return n, err
		}
		if len(page) == 0 {
			return n, nil
		}
		for i := range page {
			h := &page[i]
			path, err := rd.InclusionProof(ctx, h.Index, st.Size)
			if err != nil {
				return n, fmt.Errorf("anchor: inclusion of head %d: %w", h.Index, err)
			}
			p := tlog.AnchorProof{V: tlog.AnchorProofVersion, ProjectID: h.Log.ProjectID, LeafIndex: h.Index,
				Inclusion: make([]string, len(path)), Checkpoint: string(note), External: ext}
			for k, x := range path {
				p.Inclusion[k] = tlog.Hex(x)
			}
			raw, err := json.Marshal(p)
			if err != nil {
				return n, fmt.Errorf("anchor: proof of head %d: %w", h.Index, err)
			}
			h.Anchor = &catalog.Anchor{Type: ext[0].AnchorType, Ref: ext[0].AnchorRef, Proof: raw, AnchoredAt: at}
		}
		if err := j.cfg.Catalog.SetAnchors(ctx, page); err != nil {
			return n, err
		}
		n += len(page)
		from = page[len(page)-1].Index + 1
	}
}

// attestation is one publisher's answer for one checkpoint.
type attestation struct {
	ext tlog.ExternalProof
	at  time.Time
}

// attest has every publisher attest note, the checkpoint of tree_heads size size, and
// returns their proofs in publisher order and the anchors' anchoredAt: the earliest
// RFC 3161 genTime when a TSA attested (a time no one here controls), else the
// earliest time another party attests, else the job's clock.
//
// A publisher's answer for a checkpoint is kept, in memory until the checkpoint
// changes and in the object store (kept.go): a run that published but failed to
// record the anchors, even after a restart, reuses it rather than publishing the same
// checkpoint again, which Rekor refuses (409, no proof: the first proof is the one to
// keep). docs/anchoring.md "Publishers".
func (j *Job) attest(ctx context.Context, note []byte, size uint64) ([]tlog.ExternalProof, time.Time, error) {
	if !bytes.Equal(j.attested.checkpoint, note) {
		j.attested.checkpoint, j.attested.by = note, map[int]attestation{}
	}
	var (
		ext           []tlog.ExternalProof
		earliest, tsa time.Time
		errs          []error
	)
	for i, p := range j.cfg.Publishers {
		a, ok := j.attested.by[i]
		if !ok {
			var err error
			a, err = j.publish(ctx, note, i, p)
			if err != nil {
				j.cfg.Logger.Warn("anchor: publication failed", slog.String("anchorType", p.Type()), slog.Any("err", err))
				errs = append(errs, fmt.Errorf("%s: %w", p.Type(), err))
				continue
			}
			j.attested.by[i] = a
		}
		ext = append(ext, a.ext)
		switch {
		case a.at.IsZero():
		case p.Type() == TypeRFC3161:
			if tsa.IsZero() || a.at.Before(tsa) {
				tsa = a.at
			}
		case earliest.IsZero() || a.at.Before(earliest):
			earliest = a.at
		}
	}
	if len(ext) == 0 {
		return nil, time.Time{}, fmt.Errorf("anchor: no publisher attested tree_heads %d: %w", size, errors.Join(errs...))
	}
	switch {
	case !tsa.IsZero():
		return ext, tsa, nil
	case !earliest.IsZero():
		return ext, earliest, nil
	}
	return ext, j.cfg.Now(), nil
}

// publish returns publisher i's answer for note: the one kept in the object store
// (kept.go) if a job got it before, else a new publication's, kept before it is used.
// An answer that could not be kept is still used, as when answers lived in memory
// only.
func (j *Job) publish(ctx context.Context, note []byte, i int, p Publisher) (attestation, error) {
	if a, ok, err := j.loadKept(ctx, note, i, p.Type()); err != nil {
		return attestation{}, err
	} else if ok {
		return a, nil
	}
	ref, proof, t, err := p.Publish(ctx, note)
	if err != nil {
		return attestation{}, err
	}
	a := attestation{ext: tlog.ExternalProof{AnchorType: p.Type(), AnchorRef: ref, Proof: proof}, at: t}
	if !t.IsZero() {
		a.ext.AnchoredAt = tlog.FormatTime(t)
	}
	kept, err := j.keep(ctx, note, i, a)
	if err != nil {
		j.cfg.Logger.Warn("anchor: attestation not kept", slog.String("anchorType", p.Type()), slog.Any("err", err))
	}
	return kept, nil
}

func hexBytes(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("anchor: hex %q: %w", s, err)
	}
	return b, nil
}
