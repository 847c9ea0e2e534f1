package sequencer

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// Held payloads: before retention destroys an epoch's data key, the payloads of events
// under an active legal hold are re-encrypted under the project-stream's hold key (the
// keyring epoch HoldEpoch, which retention never destroys) into one private object per
// event, <projectId>/<stream>/held/<sequence>, and the catalog records the copy. A read
// of a shredded event looks for that copy. See docs/retention.md.

// HoldEpoch is the keyring epoch of the hold key; no receive-time epoch is named so.
const HoldEpoch = "held"

// heldCatalog is what the read path needs to find held copies; both catalog drivers
// have it. A catalog without it has no held copies.
type heldCatalog interface {
	HeldPayloads(ctx context.Context, log catalog.LogID, first, last uint64) ([]uint64, error)
}

// HeldKey returns the object key of the hold-key copy of log's event seq.
func HeldKey(log catalog.LogID, seq uint64) (string, error) {
	p, err := tiles.StreamPrefix(log.ProjectID, string(log.Stream))
	if err != nil {
		return "", err
	}
	return p.Key("held/" + strconv.FormatUint(seq, 10)), nil
}

// PayloadAAD is the additional data that binds a payload ciphertext to its
// project-stream, sequence and event id.
func PayloadAAD(log catalog.LogID, seq uint64, id string) []byte { return payloadAAD(log, seq, id) }

// heldSet returns the sequences of log with a held copy (all of them: a hold names
// at most control.MaxHoldEvents events), nil without any.
func (s *Sequencer) heldSet(ctx context.Context, log catalog.LogID, first, last uint64) (map[uint64]bool, error) {
	hc, ok := s.cfg.Catalog.(heldCatalog)
	if !ok || first == 0 {
		return nil, nil
	}
	held, err := hc.HeldPayloads(ctx, log, first, last)
	if err != nil || len(held) == 0 {
		return nil, err
	}
	set := make(map[uint64]bool, len(held))
	for _, h := range held {
		set[h] = true
	}
	return set, nil
}

// openHeldCopy decrypts the held copy of log's event seq into e; it leaves e shredded
// when the copy is gone (expired) or its key destroyed.
func (s *Sequencer) openHeldCopy(ctx context.Context, log catalog.LogID, seq uint64, id string, nonce **tlog.Nonce, payload *[]byte) error {
	key, err := HeldKey(log, seq)
	if err != nil {
		return err
	}
	ct, err := s.cfg.Store.Get(ctx, key)
	if errors.Is(err, tiles.ErrNotFound) {
		return nil // expiring: the copy is deleted before its row
	}
	if err != nil {
		return fmt.Errorf("sequencer: held payload of %s #%d: %w", log, seq, err)
	}
	plain, err := s.cfg.Keyring.Open(ctx, log, ct, payloadAAD(log, seq, id))
	switch {
	case errors.Is(err, ErrShredded):
		return nil
	case err != nil || len(plain) < tlog.NonceSize:
		return fmt.Errorf("%w: held payload of %s #%d does not decrypt: %w", ErrCorrupt, log, seq, err)
	}
	var n tlog.Nonce
	copy(n[:], plain)
	*nonce, *payload = &n, plain[tlog.NonceSize:]
	return nil
}

// openHeld fills in the payloads of the shredded events of evs that have a held copy.
func (s *Sequencer) openHeld(ctx context.Context, log catalog.LogID, evs []Stored) error {
	var first, last uint64
	for _, e := range evs {
		if e.Nonce == nil {
			if first == 0 {
				first = e.Leaf.Sequence
			}
			last = e.Leaf.Sequence
		}
	}
	held, err := s.heldSet(ctx, log, first, last)
	if err != nil {
		return err
	}
	for i := range evs {
		e := &evs[i]
		if e.Nonce == nil && held[e.Leaf.Sequence] {
			if err := s.openHeldCopy(ctx, log, e.Leaf.Sequence, e.Leaf.ID, &e.Nonce, &e.Payload); err != nil {
				return err
			}
		}
	}
	return nil
}
