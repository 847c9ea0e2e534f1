package sequencer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// payloadCache keeps decoded payload bundles by object key. Bundles of committed
// batches never change, so entries never go stale.
type payloadCache struct {
	c *lru.Cache[string, *tiles.PayloadBundle]
}

func newPayloadCache(n int) *payloadCache {
	c, _ := lru.New[string, *tiles.PayloadBundle](n) // only fails for n <= 0
	return &payloadCache{c: c}
}

func (c *payloadCache) get(key string) (*tiles.PayloadBundle, bool) { return c.c.Get(key) }
func (c *payloadCache) add(key string, b *tiles.PayloadBundle)      { c.c.Add(key, b) }

// Stored is one sealed event as read back: its leaf, its index row and, unless
// shredded, its payload and nonce.
type Stored struct {
	Leaf           tlog.Leaf
	LeafHash       tlog.Hash
	Payload        []byte      // RFC 8785 payload; nil when shredded
	Nonce          *tlog.Nonce // nil when shredded
	CiphertextHash tlog.Hash
}

// Record returns the event in tlog's rebuild and export form.
func (e *Stored) Record() tlog.Record {
	return tlog.Record{Leaf: e.Leaf, LeafHash: e.LeafHash, Payload: e.Payload, Nonce: e.Nonce,
		CiphertextHash: tlog.Hex(e.CiphertextHash)}
}

// ErrCorrupt means stored data does not decode or does not match the catalog.
var ErrCorrupt = errors.New("sequencer: stored data is corrupt")

// Events reads the sealed events with the given sequences (ascending, all committed
// and published) of log, decrypting their payloads.
func (s *Sequencer) Events(ctx context.Context, log catalog.LogID, seqs []uint64) ([]Stored, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	batches, err := s.cfg.Catalog.BatchesCovering(ctx, log, seqs[0], seqs[len(seqs)-1])
	if err != nil {
		return nil, fmt.Errorf("sequencer: batches: %w", err)
	}
	out := make([]Stored, 0, len(seqs))
	bi := 0
	for _, seq := range seqs {
		for bi < len(batches) && batches[bi].End() <= seq {
			bi++
		}
		if bi == len(batches) || batches[bi].First > seq {
			return nil, fmt.Errorf("%w: no batch holds sequence %d of %s", ErrCorrupt, seq, log)
		}
		pb, err := s.payloadBundle(ctx, log, batches[bi])
		if err != nil {
			return nil, err
		}
		e, err := s.openRecord(ctx, log, seq, pb.Records[seq-batches[bi].First])
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// openRecord decodes a payload record's leaf and decrypts its payload.
func (s *Sequencer) openRecord(ctx context.Context, log catalog.LogID, seq uint64, r tiles.PayloadRecord) (Stored, error) {
	leaf, err := tlog.DecodeLeaf(r.LeafData)
	if err != nil {
		return Stored{}, fmt.Errorf("%w: leaf of sequence %d: %w", ErrCorrupt, seq, err)
	}
	if leaf.Sequence != seq || leaf.ProjectID != log.ProjectID || leaf.Stream != string(log.Stream) {
		return Stored{}, fmt.Errorf("%w: leaf of sequence %d names %s/%s#%d", ErrCorrupt, seq, leaf.ProjectID, leaf.Stream, leaf.Sequence)
	}
	e := Stored{Leaf: leaf, LeafHash: tlog.LeafHash(r.LeafData), CiphertextHash: sha256Sum(r.Ciphertext)}
	plain, err := s.cfg.Keyring.Open(ctx, log, r.Ciphertext, payloadAAD(log, seq, leaf.ID))
	switch {
	case errors.Is(err, ErrShredded):
		return e, nil
	case err != nil:
		return Stored{}, fmt.Errorf("%w: payload of sequence %d: %w", ErrCorrupt, seq, err)
	case len(plain) < tlog.NonceSize:
		return Stored{}, fmt.Errorf("%w: payload of sequence %d is too short", ErrCorrupt, seq)
	}
	var n tlog.Nonce
	copy(n[:], plain)
	e.Nonce, e.Payload = &n, plain[tlog.NonceSize:]
	return e, nil
}

// Tree returns the published tree of log: the size and root that proofs are served
// against. A log with no events has size 0 and the empty root.
func (s *Sequencer) Tree(ctx context.Context, log catalog.LogID) (tiles.Tree, error) {
	cp, err := s.cfg.Catalog.Checkpoint(ctx, log)
	if errors.Is(err, catalog.ErrNotFound) {
		return tiles.Tree{Root: tlog.EmptyRoot}, nil
	}
	if err != nil {
		return tiles.Tree{}, fmt.Errorf("sequencer: checkpoint: %w", err)
	}
	if cp.PublishedSize < cp.Size {
		// The latest batch is committed but not yet materialized; its events are not
		// acknowledged yet. Publish now rather than serve an older tree.
		if cp, err = s.publish(ctx, log, tiles.NewWriter(s.cfg.Store, prefixOf(log), s.cfg.Logger)); err != nil {
			return tiles.Tree{}, fmt.Errorf("sequencer: publish: %w", err)
		}
	}
	if cp.Size == 0 {
		return tiles.Tree{Root: tlog.EmptyRoot}, nil
	}
	return tiles.Tree{Size: cp.Size, Root: cp.Root}, nil
}

// Proofs returns a reader of proofs over the published tree of log.
func (s *Sequencer) Proofs(ctx context.Context, log catalog.LogID) (*tiles.Reader, tiles.Tree, error) {
	t, err := s.Tree(ctx, log)
	if err != nil {
		return nil, tiles.Tree{}, err
	}
	return tiles.NewReader(s.cfg.Store, prefixOf(log), t, s.tiles), t, nil
}

func sha256Sum(b []byte) tlog.Hash { return tlog.Hash(sha256.Sum256(b)) }
