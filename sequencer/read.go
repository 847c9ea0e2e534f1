package sequencer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// batchRef returns where the payload bundle of batch b of log is: its segment of a
// tick's group object, or (rows written before those) its own object.
func batchRef(log catalog.LogID, b catalog.Batch) (tiles.PayloadRef, error) {
	return tiles.BatchPayloadRef(prefixOf(log), b.First, b.BatchID, b.Object, b.Offset, b.Length)
}

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
	if err := s.openHeld(ctx, log, out); err != nil {
		return nil, err
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

func sha256Sum(b []byte) tlog.Hash { return tlog.Hash(sha256.Sum256(b)) }
