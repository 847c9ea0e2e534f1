package fsck

import (
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/tiles"
)

// TestGroupGraceOutlastsSegments: a filesystem store's segment file takes appends for
// tiles.MaxSegmentAge after the time in its key, and the tick of the last one may
// commit up to a seal timeout later (30 s by default; five minutes allowed here), so
// a segment file older than GroupGrace can no longer become named.
func TestGroupGraceOutlastsSegments(t *testing.T) {
	if tiles.MaxSegmentAge+5*time.Minute > GroupGrace {
		t.Fatalf("GroupGrace %v is too short for segment files taking appends for %v", GroupGrace, tiles.MaxSegmentAge)
	}
}
