package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sealtrail/sealtrail/catalog"
)

// DeleteRetention removes log's policy: the stream keeps its payloads forever again.
// A stream without a policy is catalog.ErrNotFound.
func (db *DB) DeleteRetention(ctx context.Context, log catalog.LogID) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM retention_policies WHERE project_id = $1 AND stream = $2`,
		log.ProjectID, string(log.Stream))
	if err != nil {
		return fmt.Errorf("postgres: delete retention %s: %w", log, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: retention %s: %w", log, catalog.ErrNotFound)
	}
	return nil
}

// ListAllRetention returns every policy of every project, by project and stream.
func (db *DB) ListAllRetention(ctx context.Context) ([]catalog.Retention, error) {
	rows, err := db.pool.Query(ctx, `SELECT project_id, stream, days, updated_at FROM retention_policies
		ORDER BY project_id, stream`)
	rs, err := collect(rows, err, scanRetention)
	if err != nil {
		return nil, fmt.Errorf("postgres: list all retention: %w", err)
	}
	return rs, nil
}

// SetMinRetention sets the project's minimum retention in days; 0 removes it.
func (db *DB) SetMinRetention(ctx context.Context, projectID string, days int) error {
	var err error
	if days == 0 {
		_, err = db.pool.Exec(ctx, `DELETE FROM retention_minimums WHERE project_id = $1`, projectID)
	} else {
		_, err = db.pool.Exec(ctx, `INSERT INTO retention_minimums(project_id, days) VALUES ($1, $2)
			ON CONFLICT (project_id) DO UPDATE SET days = excluded.days`, projectID, days)
	}
	if err != nil {
		return fmt.Errorf("postgres: set minimum retention of %s: %w", projectID, mapErr(err))
	}
	return nil
}

// MinRetention returns the project's minimum retention in days, 0 when none is set.
func (db *DB) MinRetention(ctx context.Context, projectID string) (int, error) {
	var days int
	err := db.pool.QueryRow(ctx, `SELECT days FROM retention_minimums WHERE project_id = $1`, projectID).Scan(&days)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: minimum retention of %s: %w", projectID, err)
	}
	return days, nil
}

// Suspend records a billing suspension of the project, replacing any earlier one.
func (db *DB) Suspend(ctx context.Context, s catalog.Suspension) (catalog.Suspension, error) {
	if err := s.Validate(); err != nil {
		return s, err
	}
	s.Since = db.stamp(s.Since)
	if _, err := db.pool.Exec(ctx, `INSERT INTO project_suspensions(project_id, reason, since) VALUES ($1, $2, $3)
		ON CONFLICT (project_id) DO UPDATE SET reason = excluded.reason, since = excluded.since`,
		s.ProjectID, s.Reason, s.Since); err != nil {
		return s, fmt.Errorf("postgres: suspend %s: %w", s.ProjectID, mapErr(err))
	}
	return s, nil
}

// Unsuspend lifts the project's suspension; a project not suspended is
// catalog.ErrNotFound.
func (db *DB) Unsuspend(ctx context.Context, projectID string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM project_suspensions WHERE project_id = $1`, projectID)
	if err != nil {
		return fmt.Errorf("postgres: unsuspend %s: %w", projectID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("postgres: suspension of %s: %w", projectID, catalog.ErrNotFound)
	}
	return nil
}

// Suspension returns the project's suspension or catalog.ErrNotFound.
func (db *DB) Suspension(ctx context.Context, projectID string) (catalog.Suspension, error) {
	s := catalog.Suspension{ProjectID: projectID}
	err := db.pool.QueryRow(ctx, `SELECT reason, since FROM project_suspensions WHERE project_id = $1`, projectID).
		Scan(&s.Reason, &s.Since)
	if err != nil {
		return s, fmt.Errorf("postgres: suspension of %s: %w", projectID, mapErr(err))
	}
	s.Since = s.Since.UTC()
	return s, nil
}

// TryLease takes or renews the lease name for holder until now+ttl, and reports
// whether holder has it: a lease held by another holder is taken only once expired.
func (db *DB) TryLease(ctx context.Context, name, holder string, now time.Time, ttl time.Duration) (bool, error) {
	if err := catalog.ValidLease(name, holder, ttl); err != nil {
		return false, err
	}
	tag, err := db.pool.Exec(ctx, `INSERT INTO leases(name, holder, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE leases.holder = excluded.holder OR leases.expires_at <= $4`, name, holder, now.Add(ttl), now)
	if err != nil {
		return false, fmt.Errorf("postgres: lease %s: %w", name, err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseLease gives up holder's lease name (nothing if another holder has it).
func (db *DB) ReleaseLease(ctx context.Context, name, holder string) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM leases WHERE name = $1 AND holder = $2`, name, holder); err != nil {
		return fmt.Errorf("postgres: release lease %s: %w", name, err)
	}
	return nil
}

// EventSpan returns the sequences of log's events received in [from, to).
func (db *DB) EventSpan(ctx context.Context, log catalog.LogID, from, to time.Time) (catalog.Span, error) {
	var lo, hi *int64
	var count int64
	if err := db.pool.QueryRow(ctx, `SELECT min(seq), max(seq), count(*) FROM events
		WHERE project_id = $1 AND stream = $2 AND received_at >= $3 AND received_at < $4`,
		log.ProjectID, string(log.Stream), from, to).Scan(&lo, &hi, &count); err != nil {
		return catalog.Span{}, fmt.Errorf("postgres: event span of %s: %w", log, err)
	}
	if count == 0 || lo == nil || hi == nil {
		return catalog.Span{}, nil
	}
	return catalog.Span{First: uint64(*lo), Last: uint64(*hi), Count: uint64(count)}, nil
}

// ScrubEvents blanks the action, actor and target of log's index rows first..last,
// except the sequences in keep: what retention leaves of a shredded event is its
// sequence, id, time, status and hashes. It returns the rows changed; scrubbing again
// changes nothing.
func (db *DB) ScrubEvents(ctx context.Context, log catalog.LogID, first, last uint64, keep []uint64) (int64, error) {
	if first == 0 || last < first {
		return 0, nil
	}
	tag, err := db.pool.Exec(ctx, `UPDATE events SET action = '', actor_type = '', actor_id = '', target_type = '', target_id = ''
		WHERE project_id = $1 AND stream = $2 AND seq >= $3 AND seq <= $4 AND NOT (seq = ANY($5))
		AND (action <> '' OR actor_type <> '' OR actor_id <> '' OR target_type <> '' OR target_id <> '')`,
		log.ProjectID, string(log.Stream), int64(first), int64(last), seqArray(keep))
	if err != nil {
		return 0, fmt.Errorf("postgres: scrub %s %d-%d: %w", log, first, last, err)
	}
	return tag.RowsAffected(), nil
}

// ScrubEventSeqs is ScrubEvents for the rows of seqs alone, in one statement.
func (db *DB) ScrubEventSeqs(ctx context.Context, log catalog.LogID, seqs []uint64) (int64, error) {
	if err := catalog.CheckSeqs(seqs); err != nil || len(seqs) == 0 {
		return 0, err
	}
	tag, err := db.pool.Exec(ctx, `UPDATE events SET action = '', actor_type = '', actor_id = '', target_type = '', target_id = ''
		WHERE project_id = $1 AND stream = $2 AND seq = ANY($3)
		AND (action <> '' OR actor_type <> '' OR actor_id <> '' OR target_type <> '' OR target_id <> '')`,
		log.ProjectID, string(log.Stream), seqArray(seqs))
	if err != nil {
		return 0, fmt.Errorf("postgres: scrub %s (%d sequences): %w", log, len(seqs), err)
	}
	return tag.RowsAffected(), nil
}

// AddHeldPayloads records that the payloads of log's events seqs have a copy under
// the hold key (the objects <project>/<stream>/held/<seq>), in one statement.
// Recording one again is a no-op.
func (db *DB) AddHeldPayloads(ctx context.Context, log catalog.LogID, seqs []uint64) error {
	if err := catalog.CheckSeqs(seqs); err != nil || len(seqs) == 0 {
		return err
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO held_payloads(project_id, stream, seq) SELECT $1, $2, s FROM unnest($3::bigint[]) AS s
		ON CONFLICT DO NOTHING`, log.ProjectID, string(log.Stream), seqArray(seqs)); err != nil {
		return fmt.Errorf("postgres: held payloads %s (%d): %w", log, len(seqs), err)
	}
	return nil
}

// RemoveHeldPayloads forgets the hold-key copies of log's events seqs, in one
// statement.
func (db *DB) RemoveHeldPayloads(ctx context.Context, log catalog.LogID, seqs []uint64) error {
	if err := catalog.CheckSeqs(seqs); err != nil || len(seqs) == 0 {
		return err
	}
	if _, err := db.pool.Exec(ctx, `DELETE FROM held_payloads WHERE project_id = $1 AND stream = $2 AND seq = ANY($3)`,
		log.ProjectID, string(log.Stream), seqArray(seqs)); err != nil {
		return fmt.Errorf("postgres: held payloads %s (%d): %w", log, len(seqs), err)
	}
	return nil
}

// seqArray is seqs as a bigint[] parameter; callers check them with
// catalog.CheckSeqs.
func seqArray(seqs []uint64) []int64 {
	out := make([]int64, len(seqs))
	for i, s := range seqs {
		out[i] = int64(s)
	}
	return out
}

// HeldPayloads returns the sequences in [first, last] of log whose payload has a copy
// under the hold key, ascending.
func (db *DB) HeldPayloads(ctx context.Context, log catalog.LogID, first, last uint64) ([]uint64, error) {
	rows, err := db.pool.Query(ctx, `SELECT seq FROM held_payloads WHERE project_id = $1 AND stream = $2
		AND seq >= $3 AND seq <= $4 ORDER BY seq`, log.ProjectID, string(log.Stream), int64(first), int64(min(last, 1<<62)))
	out, err := collect(rows, err, func(r scanner) (uint64, error) {
		var s int64
		err := r.Scan(&s)
		return uint64(s), err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: held payloads of %s: %w", log, err)
	}
	return out, nil
}
