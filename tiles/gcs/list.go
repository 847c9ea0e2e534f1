package gcs

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/iterator"

	"github.com/sealtrail/sealtrail/tiles"
)

var _ tiles.Lister = (*Store)(nil)

// List calls fn with every key under prefix (tiles.Lister).
func (s *Store) List(ctx context.Context, prefix string, fn func(key string) error) error {
	it := s.bucket.Objects(ctx, &storage.Query{Prefix: s.prefix + prefix})
	for {
		o, err := it.Next()
		if errors.Is(err, iterator.Done) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("gcs: list %s: %w", prefix, err)
		}
		key, ok := strings.CutPrefix(o.Name, s.prefix)
		if !ok || tiles.CheckKey(key) != nil {
			continue
		}
		if err := fn(key); err != nil {
			return err
		}
	}
}
