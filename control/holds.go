package control

import (
	"cmp"
	"context"
	"slices"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tlog"
)

// MaxHoldEvents bounds the events one legal hold names.
const MaxHoldEvents = 100_000

// A hold's membership tree is an RFC 6962 tree whose leaf data are the held events'
// leaf hashes (32 bytes each), in sequence order. Its root is committed in the
// project_audit stream when the hold is created; a membership proof is an inclusion
// proof in that tree.

// membershipTree builds the membership tree of events (in sequence order).
func membershipTree(events []catalog.Event) (*tlog.MemoryTree, error) {
	var t tlog.MemoryTree
	for _, e := range events {
		if err := t.AppendLeafHash(tlog.LeafHash(e.LeafHash[:])); err != nil {
			return nil, err
		}
	}
	return &t, nil
}

// CreateHold places a legal hold on events of the project's events stream.
func (s *Service) CreateHold(ctx context.Context, actor Actor, projectID string, eventIDs []string, reason string) (catalog.LegalHold, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return catalog.LegalHold{}, err
	}
	if len(eventIDs) == 0 || len(eventIDs) > MaxHoldEvents {
		return catalog.LegalHold{}, invalid("a hold names 1 to %d events", MaxHoldEvents)
	}
	if len(reason) > 1024 {
		return catalog.LegalHold{}, invalid("reason must be at most 1024 bytes")
	}
	if err := checkText("reason", reason); err != nil {
		return catalog.LegalHold{}, err
	}
	for _, id := range eventIDs {
		if err := checkText("event id", id); err != nil {
			return catalog.LegalHold{}, err
		}
	}
	ids := slices.Clone(eventIDs)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	log := catalog.LogID{ProjectID: projectID, Stream: catalog.StreamEvents}
	found, err := s.cat.EventsByID(ctx, log, ids)
	if err != nil {
		return catalog.LegalHold{}, mapCatalog(err, "events")
	}
	events := make([]catalog.Event, 0, len(ids))
	for _, id := range ids {
		e, ok := found[id]
		if !ok {
			return catalog.LegalHold{}, notFound("event %s in project %s", id, projectID)
		}
		events = append(events, e)
	}
	slices.SortFunc(events, func(a, b catalog.Event) int { return cmp.Compare(a.Sequence, b.Sequence) })
	tree, err := membershipTree(events)
	if err != nil {
		return catalog.LegalHold{}, err
	}
	root, err := tree.Root(tree.Size())
	if err != nil {
		return catalog.LegalHold{}, err
	}
	holdID, err := newID("hold_")
	if err != nil {
		return catalog.LegalHold{}, err
	}
	ordered := make([]string, len(events))
	for i, e := range events {
		ordered[i] = e.ID
	}
	h := catalog.LegalHold{ID: holdID, ProjectID: projectID, MembershipRoot: root, EventIDs: ordered, CreatedAt: s.now()}
	meta := map[string]any{"membershipRoot": tlog.Hex(root), "eventCount": len(ordered)}
	if reason != "" {
		meta["reason"] = reason
	}
	rec := record{action: "legal_hold.created", target: Actor{Type: "legal_hold", ID: holdID}, metadata: meta}
	err = s.change(ctx, projectID, actor, rec, func() (err error) {
		h, err = s.cat.CreateLegalHold(ctx, h)
		return mapCatalog(err, "legal hold "+holdID)
	})
	return h, err
}

// ReleaseHold releases an active hold.
func (s *Service) ReleaseHold(ctx context.Context, actor Actor, projectID, holdID string) (catalog.LegalHold, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return catalog.LegalHold{}, err
	}
	h, err := s.cat.LegalHold(ctx, projectID, holdID)
	if err != nil {
		return catalog.LegalHold{}, mapCatalog(err, "legal hold "+holdID)
	}
	if h.State() != catalog.HoldActive {
		return catalog.LegalHold{}, stateErr("legal hold %s is already released", holdID)
	}
	rec := record{action: "legal_hold.released", target: Actor{Type: "legal_hold", ID: holdID},
		metadata: map[string]any{"membershipRoot": tlog.Hex(h.MembershipRoot)}}
	err = s.change(ctx, projectID, actor, rec, func() (err error) {
		h, err = s.cat.ReleaseLegalHold(ctx, projectID, holdID, s.now())
		return mapCatalog(err, "legal hold "+holdID)
	})
	return h, err
}

// ListHolds lists the project's holds.
func (s *Service) ListHolds(ctx context.Context, projectID string) ([]catalog.LegalHold, error) {
	if _, err := s.requireProject(ctx, projectID); err != nil {
		return nil, err
	}
	hs, err := s.cat.ListLegalHolds(ctx, projectID)
	return hs, mapCatalog(err, "legal holds")
}

// HoldProof proves that eventID is a member of the hold.
type HoldProof struct {
	HoldID         string
	EventID        string
	LeafHash       tlog.Hash // the event's leaf hash (the membership leaf's data)
	Index, Size    uint64    // position in the membership tree
	Proof          []tlog.Hash
	MembershipRoot tlog.Hash
}

// ProveHoldMembership returns the membership proof of eventID in the hold, or
// ErrNotFound if the hold is unknown in this project or does not hold the event.
func (s *Service) ProveHoldMembership(ctx context.Context, projectID, holdID, eventID string) (HoldProof, error) {
	h, err := s.cat.LegalHold(ctx, projectID, holdID)
	if err != nil {
		return HoldProof{}, mapCatalog(err, "legal hold "+holdID)
	}
	idx := slices.Index(h.EventIDs, eventID)
	if idx < 0 {
		return HoldProof{}, notFound("event %s is not in legal hold %s", eventID, holdID)
	}
	found, err := s.cat.EventsByID(ctx, catalog.LogID{ProjectID: projectID, Stream: catalog.StreamEvents}, h.EventIDs)
	if err != nil {
		return HoldProof{}, mapCatalog(err, "events")
	}
	events := make([]catalog.Event, len(h.EventIDs))
	for i, id := range h.EventIDs {
		e, ok := found[id]
		if !ok {
			return HoldProof{}, notFound("held event %s", id)
		}
		events[i] = e
	}
	tree, err := membershipTree(events)
	if err != nil {
		return HoldProof{}, err
	}
	if root, err := tree.Root(tree.Size()); err != nil || root != h.MembershipRoot {
		return HoldProof{}, stateErr("legal hold %s: events no longer reproduce the committed membership root", holdID)
	}
	p, err := tlog.ProveInclusion(uint64(idx), tree.Size(), tree)
	if err != nil {
		return HoldProof{}, err
	}
	return HoldProof{HoldID: holdID, EventID: eventID, LeafHash: events[idx].LeafHash, Index: uint64(idx),
		Size: tree.Size(), Proof: p, MembershipRoot: h.MembershipRoot}, nil
}
