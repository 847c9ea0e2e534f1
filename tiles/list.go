package tiles

import "context"

// A Lister is a Store that can enumerate its keys. Every driver of this module is one;
// only maintenance tools use it (sealtraild fsck, to find payload objects no committed
// batch names). The service never lists: its hot path only gets and creates.
type Lister interface {
	// List calls fn with every key that starts with prefix (a key prefix such as
	// "<projectId>/<stream>/payload/"), in no particular order. Objects created or
	// deleted during the call may or may not be listed. An error from fn stops the
	// listing and is returned.
	List(ctx context.Context, prefix string, fn func(key string) error) error
}
