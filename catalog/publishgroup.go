package catalog

import "context"

// PublishGroupFunc is the function PublishGroup runs under the publish locks of its
// project-streams, with their checkpoints read under those locks (in the order of its
// logs; a project-stream never sealed has a zero checkpoint with only Log set). It
// returns one error per checkpoint, nil where that stream's tiles, entry bundles and
// checkpoint note are now durable up to cp.Size.
type PublishGroupFunc = func(ctx context.Context, cps []Checkpoint) []error

// Published is one project-stream's outcome of PublishGroup: its checkpoint as left
// after, and ErrNotFound for a project-stream never sealed or the error fn returned
// for it (its published size then unchanged).
type Published struct {
	Checkpoint Checkpoint
	Err        error
}

// PublishOutcomes returns PublishGroup's outcomes for cps given fn's errors: the
// published size of each stream fn published becomes its size.
func PublishOutcomes(cps []Checkpoint, found []bool, errs []error) []Published {
	out := make([]Published, len(cps))
	for i, cp := range cps {
		switch {
		case !found[i]:
			out[i] = Published{Checkpoint: cp, Err: ErrNotFound}
		case i < len(errs) && errs[i] != nil:
			out[i] = Published{Checkpoint: cp, Err: errs[i]}
		default:
			cp.PublishedSize = max(cp.PublishedSize, cp.Size)
			out[i] = Published{Checkpoint: cp}
		}
	}
	return out
}
