package httpapi

import (
	"context"
	"crypto/ed25519"
	"errors"
	sumdb "golang.org/x/mod/sumdb/tlog"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/sequencer"
	"github.com/sealtrail/sealtrail/tiles"
)

var errNop = errors.New("not used by this test")

// nopSequencer and nopCatalog satisfy the Server's dependencies for tests that only
// inspect routing; every call fails.
type nopSequencer struct{}

func (nopSequencer) Submit(context.Context, catalog.LogID, sequencer.Entry) (sequencer.Result, error) {
	return sequencer.Result{}, errNop
}
func (nopSequencer) SubmitMany(_ context.Context, _ catalog.LogID, es []sequencer.Entry) ([]sequencer.Result, []error) {
	errs := make([]error, len(es))
	for i := range errs {
		errs[i] = errNop
	}
	return make([]sequencer.Result, len(es)), errs
}
func (nopSequencer) Tree(context.Context, catalog.LogID) (tiles.Tree, error) {
	return tiles.Tree{}, errNop
}
func (nopSequencer) Materialize(context.Context, catalog.LogID) (tiles.Tree, error) {
	return tiles.Tree{}, errNop
}
func (nopSequencer) TileData(context.Context, catalog.LogID, sumdb.Tile) ([]byte, error) {
	return nil, errNop
}
func (nopSequencer) Proofs(context.Context, catalog.LogID) (*tiles.Reader, tiles.Tree, error) {
	return nil, tiles.Tree{}, errNop
}
func (nopSequencer) ProofsOver(context.Context, catalog.LogID, uint64) (*tiles.Reader, tiles.Tree, error) {
	return nil, tiles.Tree{}, errNop
}
func (nopSequencer) EventSequence(context.Context, catalog.LogID, string) (uint64, error) {
	return 0, errNop
}
func (nopSequencer) Events(context.Context, catalog.LogID, []uint64) ([]sequencer.Stored, error) {
	return nil, errNop
}
func (nopSequencer) Rebuild(context.Context, catalog.LogID, func(string) []ed25519.PublicKey) (sequencer.RebuildResult, error) {
	return sequencer.RebuildResult{}, errNop
}

type nopCatalog struct{}

func (nopCatalog) ListSigningKeys(context.Context, string) ([]catalog.SigningKey, error) {
	return nil, errNop
}
func (nopCatalog) SigningKey(context.Context, string, string) (catalog.SigningKey, error) {
	return catalog.SigningKey{}, errNop
}
func (nopCatalog) EventByID(context.Context, catalog.LogID, string) (catalog.Event, error) {
	return catalog.Event{}, errNop
}
func (nopCatalog) QueryEvents(context.Context, catalog.Query) ([]catalog.Event, error) {
	return nil, errNop
}
func (nopCatalog) ListTreeHeads(context.Context, catalog.LogID, int) ([]catalog.TreeHead, error) {
	return nil, errNop
}
