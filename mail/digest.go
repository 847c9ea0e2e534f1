package mail

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// DigestCatalog is the part of the catalog digests read and write.
type DigestCatalog interface {
	ListDigestStates(ctx context.Context, afterID string, limit int) ([]catalog.DigestState, error)
	DigestRecipients(ctx context.Context, projectID string) ([]string, error)
	CommitDigest(ctx context.Context, prevPeriod string, next catalog.DigestState, msgs []catalog.MailMessage) error
	Project(ctx context.Context, id string) (catalog.Project, error)
	ListLegalHolds(ctx context.Context, projectID string) ([]catalog.LegalHold, error)
	ListTreeHeads(ctx context.Context, log catalog.LogID, limit int) ([]catalog.TreeHead, error)
}

// Trees gives a stream's committed tree (the sequencer).
type Trees interface {
	Tree(ctx context.Context, log catalog.LogID) (tiles.Tree, error)
}

// DigestConfig configures the digests.
type DigestConfig struct {
	Origin string             // the service origin (checkpoint origins' first part)
	Key    ed25519.PrivateKey // the service key: signs the tree heads and the digest
	// Interval is how often Run looks for due digests (default 1 min).
	Interval time.Duration
	Now      func() time.Time
	Logger   *slog.Logger
}

// Digester sends each project's digest once per period of its schedule, to the
// members who opted in. Any number of replicas may run one: the catalog's
// CommitDigest lets exactly one of them queue each digest.
type Digester struct {
	cat   DigestCatalog
	trees Trees
	queue *Queue
	cfg   DigestConfig
}

// NewDigester returns the digester; its mail goes through queue.
func NewDigester(cat DigestCatalog, trees Trees, queue *Queue, cfg DigestConfig) (*Digester, error) {
	if len(cfg.Key) != ed25519.PrivateKeySize || cfg.Origin == "" {
		return nil, errors.New("mail: digests need the service key and origin")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Digester{cat: cat, trees: trees, queue: queue, cfg: cfg}, nil
}

// Period names the period of schedule that t falls in: "daily 2026-11-24" (UTC days),
// "weekly 2026-W48" (ISO weeks, from Monday 00:00 UTC); "" for DigestOff.
func Period(schedule string, t time.Time) string {
	t = t.UTC()
	switch schedule {
	case catalog.DigestDaily:
		return "daily " + t.Format("2006-01-02")
	case catalog.DigestWeekly:
		y, w := t.ISOWeek()
		return fmt.Sprintf("weekly %04d-W%02d", y, w)
	}
	return ""
}

// Run sends due digests until ctx ends.
func (d *Digester) Run(ctx context.Context) {
	t := time.NewTicker(d.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := d.RunOnce(ctx); err != nil && ctx.Err() == nil {
			d.cfg.Logger.WarnContext(ctx, "mail: digests", slog.Any("err", err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RunOnce queues the digest of every project whose current period has none yet and
// that has opted-in members; it returns how many digests this replica queued. A
// project without recipients is skipped without recording a digest, so its next one
// counts from the last digest that was sent.
func (d *Digester) RunOnce(ctx context.Context) (int, error) {
	n := 0
	var errs []error
	for after := ""; ; {
		states, err := d.cat.ListDigestStates(ctx, after, 500)
		if err != nil {
			return n, fmt.Errorf("mail: digest states: %w", err)
		}
		if len(states) == 0 {
			break
		}
		after = states[len(states)-1].ProjectID
		for _, st := range states {
			sent, err := d.maybeSend(ctx, st)
			if err != nil {
				// One project's failure must not starve the others.
				errs = append(errs, err)
				continue
			}
			if sent {
				n++
			}
		}
	}
	if n > 0 && d.queue != nil {
		d.queue.Wake()
	}
	return n, errors.Join(errs...)
}

func (d *Digester) maybeSend(ctx context.Context, st catalog.DigestState) (bool, error) {
	now := catalog.MS(d.cfg.Now())
	period := Period(st.Schedule, now)
	if period == "" || period == st.LastPeriod || st.RecipientCount == 0 {
		return false, nil
	}
	to, err := d.cat.DigestRecipients(ctx, st.ProjectID)
	if err != nil || len(to) == 0 {
		return false, err
	}
	dg, sizes, err := d.build(ctx, st, period, now)
	if err != nil {
		return false, fmt.Errorf("mail: digest of %s: %w", st.ProjectID, err)
	}
	signed, err := tlog.SignDigest(d.cfg.Key, dg)
	if err != nil {
		return false, err
	}
	body := tlog.DigestText(dg, signed)
	subject := fmt.Sprintf("Sealtrail digest: %s, %s", subjectName(dg.Name), period)
	msgs := make([]catalog.MailMessage, 0, len(to))
	for _, addr := range to {
		m, err := NewMessage(addr, subject, body, now)
		if err != nil {
			return false, err
		}
		msgs = append(msgs, m)
	}
	next := catalog.DigestState{ProjectID: st.ProjectID, LastPeriod: period, LastAt: now, LastEvents: sizes[0], LastAudit: sizes[1]}
	switch err := d.cat.CommitDigest(ctx, st.LastPeriod, next, msgs); {
	case errors.Is(err, catalog.ErrConflict):
		return false, nil // another replica queued this digest
	case err != nil:
		return false, err
	}
	if d.queue != nil {
		d.queue.m.digests.Inc()
	}
	d.cfg.Logger.InfoContext(ctx, "mail: digest queued", slog.String("project", st.ProjectID),
		slog.String("period", period), slog.Int("recipients", len(msgs)))
	return true, nil
}

// subjectName is a project name fit for a subject line: control characters become
// spaces and it is cut to 60 characters.
func subjectName(name string) string {
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, name)
	if r := []rune(name); len(r) > 60 {
		name = string(r[:59]) + "…"
	}
	return name
}

var digestStreams = [2]catalog.Stream{catalog.StreamEvents, catalog.StreamProjectAudit}

// build gathers the facts of the digest and the two streams' sizes.
func (d *Digester) build(ctx context.Context, st catalog.DigestState, period string, now time.Time) (*tlog.Digest, [2]uint64, error) {
	var sizes [2]uint64
	p, err := d.cat.Project(ctx, st.ProjectID)
	if err != nil {
		return nil, sizes, err
	}
	dg := &tlog.Digest{Origin: tlog.DigestOrigin(d.cfg.Origin, p.ID), ProjectID: p.ID, Name: p.Name, Period: period,
		Issued: tlog.FormatTime(now)}
	if !st.LastAt.IsZero() {
		dg.Previous = tlog.FormatTime(st.LastAt)
	}
	last := [2]uint64{st.LastEvents, st.LastAudit}
	for i, s := range digestStreams {
		log := catalog.LogID{ProjectID: p.ID, Stream: s}
		t, err := d.trees.Tree(ctx, log)
		if err != nil {
			return nil, sizes, fmt.Errorf("tree of %s: %w", log, err)
		}
		sizes[i] = t.Size
		h := tlog.STH{V: tlog.TreeHeadVersion, ProjectID: p.ID, Stream: string(s), TreeSize: t.Size,
			RootHash: tlog.Hex(t.Root), Timestamp: dg.Issued}
		if err := tlog.SignSTH(d.cfg.Key, &h); err != nil {
			return nil, sizes, err
		}
		dg.Heads = append(dg.Heads, h)
		dg.Counts = append(dg.Counts, tlog.DigestCount{Stream: string(s), Count: t.Size - min(t.Size, last[i])})
		a, err := d.latestAnchor(ctx, log)
		if err != nil {
			return nil, sizes, err
		}
		dg.Anchors = append(dg.Anchors, a)
	}
	holds, err := d.cat.ListLegalHolds(ctx, p.ID)
	if err != nil {
		return nil, sizes, fmt.Errorf("legal holds: %w", err)
	}
	for _, h := range holds {
		if h.State() == catalog.HoldActive {
			dg.Holds = append(dg.Holds, tlog.DigestHold{ID: h.ID, MembershipRoot: tlog.Hex(h.MembershipRoot),
				Events: len(h.EventIDs), CreatedAt: tlog.FormatTime(h.CreatedAt)})
		}
	}
	return dg, sizes, nil
}

// anchorLookback is how many of a stream's newest hourly tree heads are searched for
// the latest anchored one.
const anchorLookback = 500

// latestAnchor returns the newest anchored tree head of log, or a "not yet anchored"
// entry.
func (d *Digester) latestAnchor(ctx context.Context, log catalog.LogID) (tlog.DigestAnchor, error) {
	heads, err := d.cat.ListTreeHeads(ctx, log, anchorLookback)
	if err != nil {
		return tlog.DigestAnchor{}, fmt.Errorf("tree heads of %s: %w", log, err)
	}
	for _, h := range heads {
		if h.Anchor != nil {
			// The type is one word of the note; the reference is quoted and may be anything.
			typ := strings.Join(strings.Fields(h.Anchor.Type), "-")
			if typ == "" || typ == "none" {
				typ = "unknown"
			}
			return tlog.DigestAnchor{Stream: string(log.Stream), TreeSize: h.TreeSize, RootHash: tlog.Hex(h.RootHash),
				AnchoredAt: tlog.FormatTime(h.Anchor.AnchoredAt), Type: typ, Ref: h.Anchor.Ref}, nil
		}
	}
	return tlog.DigestAnchor{Stream: string(log.Stream)}, nil
}
