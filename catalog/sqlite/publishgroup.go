package sqlite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sealtrail/sealtrail/catalog"
)

// checkpointsChunk bounds the project-streams read by one checkpoints query (two
// parameters each, well under SQLite's limit of 32,766).
const checkpointsChunk = 500

// PublishGroup implements catalog.Catalog: Publish for many project-streams. It takes
// their in-process publish locks in catalog.SortLogs order (as one Publish takes its
// one lock, so the two never deadlock), reads their checkpoints with one query per
// 500 streams, runs fn, and raises the published sizes of the streams fn published,
// in memory at once and in the file in the next write of published sizes, one
// transaction for all of them (published.go).
func (db *DB) PublishGroup(ctx context.Context, logs []catalog.LogID, fn catalog.PublishGroupFunc) ([]catalog.Published, error) {
	if err := catalog.CheckGroup(logs); err != nil {
		return nil, err
	}
	order := slices.Clone(logs)
	catalog.SortLogs(order)
	for _, log := range order {
		release, err := db.publocks.acquire(ctx, log)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	cps, found, err := db.checkpoints(ctx, logs)
	if err != nil {
		return nil, err
	}
	out := catalog.PublishOutcomes(cps, found, fn(ctx, cps))
	for i, p := range out {
		if p.Err == nil && cps[i].PublishedSize < cps[i].Size {
			db.pub.set(p.Checkpoint.Log, p.Checkpoint.Size)
		}
	}
	return out, nil
}

// checkpoints returns the checkpoints of logs, in their order, and whether each was
// found (a project-stream never sealed has a zero checkpoint with only Log set).
func (db *DB) checkpoints(ctx context.Context, logs []catalog.LogID) ([]catalog.Checkpoint, []bool, error) {
	at := make(map[catalog.LogID]int, len(logs))
	cps := make([]catalog.Checkpoint, len(logs))
	found := make([]bool, len(logs))
	for i, log := range logs {
		at[log] = i
		cps[i].Log = log
	}
	for chunk := range slices.Chunk(logs, checkpointsChunk) {
		args := make([]any, 0, 2*len(chunk))
		for _, log := range chunk {
			args = append(args, log.ProjectID, string(log.Stream))
		}
		q := `SELECT ` + checkpointCols + ` FROM ` + checkpointTables + ` WHERE (l.project_id, l.stream) IN (VALUES ` +
			strings.TrimSuffix(strings.Repeat("(?, ?), ", len(chunk)), ", ") + `)`
		rows, err := db.r.QueryContext(ctx, q, args...)
		if err != nil {
			return nil, nil, fmt.Errorf("sqlite: checkpoints of %d streams: %w", len(chunk), err)
		}
		for rows.Next() {
			cp, err := scanCheckpoint(rows)
			if err != nil {
				rows.Close()
				return nil, nil, fmt.Errorf("sqlite: checkpoints of %d streams: %w", len(chunk), err)
			}
			if i, ok := at[cp.Log]; ok {
				db.pub.overlay(&cp)
				cps[i], found[i] = cp, true
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("sqlite: checkpoints of %d streams: %w", len(chunk), err)
		}
	}
	return cps, found, nil
}
