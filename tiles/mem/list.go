package mem

import (
	"context"

	"github.com/sealtrail/sealtrail/tiles"
)

var _ tiles.Lister = (*Store)(nil)

// List calls fn with every key under prefix (tiles.Lister).
func (s *Store) List(ctx context.Context, prefix string, fn func(key string) error) error {
	for _, k := range s.Keys(prefix) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(k); err != nil {
			return err
		}
	}
	return nil
}
