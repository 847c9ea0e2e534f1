package fsck

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
)

// GroupGrace is how old a group payload object (its time is in its key) must be
// before fsck may call it an orphan. A tick writes its object before its commit and
// gives up after the sequencer's seal timeout (30 s by default); a filesystem
// store's segment file takes appends for at most tiles.MaxSegmentAge after the time
// in its key. So an object older than this at the start of the check either was
// named by a commit before the check began, and the batch rows read afterwards name
// it, or never will be.
const GroupGrace = 10 * time.Minute

// groupCheck is the state of the check of group payload objects, which are shared by
// the project-streams of a tick: the objects every batch row read names, and the time
// before which an object no row names is an orphan.
type groupCheck struct {
	named  map[string]bool
	before time.Time
}

// groupOrphans lists the group payload objects and reports (and with Sweep deletes)
// those that no batch row of any project-stream names and that are older than
// GroupGrace at the start of the check. Run calls it after every stream's rows were
// read. A key under the prefix that is not a group object's is reported too.
func groupOrphans(ctx context.Context, o Options, r *Report, g *groupCheck) error {
	var found []string
	err := o.Store.List(ctx, tiles.GroupPayloadPrefix, func(key string) error {
		if g.named[key] {
			return nil
		}
		if t, ok := tiles.GroupPayloadTime(key); ok && !t.Before(g.before) {
			return nil // possibly in flight
		}
		found = append(found, key)
		return nil
	})
	if err != nil {
		return fmt.Errorf("fsck: list %s: %w", tiles.GroupPayloadPrefix, err)
	}
	slices.Sort(found)
	for _, key := range found {
		p := Problem{Kind: Orphan, Key: key, Detail: "no committed batch names it"}
		o.Logger.Warn("fsck: "+Orphan, "key", key)
		r.Problems = append(r.Problems, p)
		if !o.Sweep {
			continue
		}
		if err := o.Store.Delete(ctx, key); err != nil {
			return fmt.Errorf("fsck: sweep %s: %w", key, err)
		}
		r.Swept = append(r.Swept, key)
	}
	return nil
}
