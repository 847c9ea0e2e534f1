package anchor

import (
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
	var (
		ext  []tlog.ExternalProof
		at   time.Time
		errs []error
	)
	for _, p := range j.cfg.Publishers {
		ref, proof, t, err := p.Publish(ctx, note)
		if err != nil {
			j.cfg.Logger.Warn("anchor: publication failed", slog.String("anchorType", p.Type()), slog.Any("err", err))
			errs = append(errs, fmt.Errorf("%s: %w", p.Type(), err))
			continue
		}
		e := tlog.ExternalProof{AnchorType: p.Type(), AnchorRef: ref, Proof: proof}
		if !t.IsZero() {
			e.AnchoredAt = tlog.FormatTime(t)
			if at.IsZero() || t.Before(at) {
				at = t
			}
		}
		ext = append(ext, e)
	}
	if len(ext) == 0 {
		return 0, fmt.Errorf("anchor: no publisher attested tree_heads %d: %w", st.Size, errors.Join(errs...))
	}
	if at.IsZero() {
		at = j.cfg.Now()
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

func hexBytes(s string) ([]byte, error) {
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("anchor: hex %q: %w", s, err)
	}
	return b, nil
}
