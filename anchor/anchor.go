package anchor

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// Publisher makes the signed tree_heads checkpoint known to a party outside the service.
type Publisher interface {
	// Type is the anchorType it produces: "witness", "rekor" or "rfc3161".
	Type() string
	// Publish submits signedCheckpoint (the whole note, body and signature lines, as
	// served at <tree_heads prefix>/checkpoint) and returns a reference (a URL, log
	// index or serial), the proof as a JSON document that the package's Verify checks
	// offline, and the time the external party attests (zero if it attests none).
	Publish(ctx context.Context, signedCheckpoint []byte) (ref string, proof json.RawMessage, at time.Time, err error)
}

// TypeRFC3161 is the anchorType of an RFC 3161 timestamp (package anchor/tsa): its
// time, when present, is the anchors' anchoredAt.
const TypeRFC3161 = "rfc3161"

// Prefix is the object-store prefix of the tree_heads log. Project ids start with
// "prj_", so it never meets a project-stream's prefix.
const Prefix tiles.Prefix = "tree_heads/"

// DefaultInterval is the spec's anchoring interval.
const DefaultInterval = time.Hour

// pageSize is how many rows one catalog call reads or writes.
const pageSize = catalog.MaxLimit

// Config configures a Job.
type Config struct {
	Catalog catalog.AnchorCatalog
	Store   tiles.Store
	// Origin is the service origin; the log's checkpoint origin is Origin/tree_heads.
	Origin string
	// Key is the service key: it signs the stream heads and the checkpoint.
	Key ed25519.PrivateKey
	// Interval is the time between runs (default DefaultInterval).
	Interval time.Duration
	// Publishers attest each new checkpoint; none means heads are logged in tree_heads
	// but stay unanchored. The first publisher that succeeds names a head's
	// anchorType and anchorRef; every one that succeeds is in its anchorProof.
	Publishers []Publisher
	// Holder names this runner in the catalog lease (default: random).
	Holder string
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Job is the anchoring job. RunOnce calls are serialized by the caller (Run does).
type Job struct {
	cfg    Config
	origin string
	writer *tiles.Writer
	cache  *tiles.TileCache
	// attested holds the publishers' answers for the last checkpoint published
	// (publish.go, attest).
	attested struct {
		checkpoint []byte
		by         map[int]attestation
	}
}

// New returns a Job.
func New(cfg Config) (*Job, error) {
	if cfg.Catalog == nil || cfg.Store == nil || cfg.Key == nil || cfg.Origin == "" {
		return nil, errors.New("anchor: Catalog, Store, Key and Origin are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Holder == "" {
		var b [8]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("anchor: holder id: %w", err)
		}
		cfg.Holder = "anchor-" + hex.EncodeToString(b[:])
	}
	cache, err := tiles.NewTileCache(256)
	if err != nil {
		return nil, err
	}
	return &Job{cfg: cfg, origin: tlog.TreeHeadsOrigin(cfg.Origin), writer: tiles.NewWriter(cfg.Store, Prefix, cfg.Logger), cache: cache}, nil
}

// Origin is the checkpoint origin of the tree_heads log.
func (j *Job) Origin() string { return j.origin }

// VerifierKey is the signed-note verifier key of the tree_heads checkpoint, the one
// key a witness needs to follow every tenant.
func (j *Job) VerifierKey() (string, error) {
	return tlog.CheckpointVerifierKey(j.cfg.Key.Public().(ed25519.PublicKey), j.origin)
}

// Run runs the job at once and then every interval until ctx ends.
func (j *Job) Run(ctx context.Context) {
	t := time.NewTicker(j.cfg.Interval)
	defer t.Stop()
	for {
		if rep, err := j.RunOnce(ctx); err != nil && ctx.Err() == nil {
			j.cfg.Logger.Error("anchoring failed", slog.Any("err", err))
		} else if rep.Appended > 0 || rep.Anchored > 0 {
			j.cfg.Logger.Info("anchoring", slog.Int("appended", rep.Appended), slog.Int("anchored", rep.Anchored),
				slog.Uint64("tree_heads_size", rep.Size))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Report says what one run did.
type Report struct {
	// Leased is false when another runner holds the lease: the run did nothing.
	Leased bool
	// Appended is the number of heads appended, Size the tree_heads size after the
	// run, Anchored the number of heads that got their anchor.
	Appended int
	Size     uint64
	Anchored int
}

// RunOnce runs the job once: take the lease, finish what a crash left (tiles and
// checkpoint of committed leaves), append every grown head, publish the checkpoint
// and record the anchors.
func (j *Job) RunOnce(ctx context.Context) (Report, error) {
	var rep Report
	leased, err := j.cfg.Catalog.AnchorLease(ctx, j.cfg.Holder, j.cfg.Now(), j.leaseTTL())
	if err != nil || !leased {
		return rep, err
	}
	rep.Leased = true
	st, err := j.cfg.Catalog.TreeHeadsLog(ctx)
	if err != nil {
		return rep, err
	}
	// Leaves committed by a run that crashed before writing them.
	if err := j.materialize(ctx, st); err != nil {
		return rep, err
	}
	next, n, err := j.appendGrown(ctx, st)
	if err != nil {
		return rep, err
	}
	rep.Appended, rep.Size = n, next.Size
	if err := j.materialize(ctx, next); err != nil {
		return rep, err
	}
	rep.Anchored, err = j.anchor(ctx, next)
	return rep, err
}

func (j *Job) leaseTTL() time.Duration { return max(j.cfg.Interval*3/2, 10*time.Second) }

// headSTH is the signed tree head a catalog head records.
func headSTH(h catalog.TreeHead) tlog.STH {
	return tlog.STH{V: tlog.TreeHeadVersion, ProjectID: h.Log.ProjectID, Stream: string(h.Log.Stream), TreeSize: h.TreeSize,
		RootHash: tlog.Hex(h.RootHash), Timestamp: tlog.FormatTime(h.Timestamp), Signature: hex.EncodeToString(h.Signature)}
}

// checkpoint returns the signed tree_heads checkpoint of the committed state st.
// Ed25519 is deterministic: signing it again after a crash gives the same bytes.
func (j *Job) checkpoint(st catalog.TreeHeadsLog) ([]byte, error) {
	root := st.Root
	if st.Size == 0 {
		root = tlog.EmptyRoot
	}
	return tlog.SignCheckpoint(j.cfg.Key, j.origin, st.Size, root)
}

// ConsistencyProof proves the tree_heads log of size newSize extends the one of size
// oldSize, from the published tiles.
func (j *Job) ConsistencyProof(ctx context.Context, oldSize, newSize uint64) ([]tlog.Hash, error) {
	st, err := j.cfg.Catalog.TreeHeadsLog(ctx)
	if err != nil {
		return nil, err
	}
	if newSize != st.Size || st.PublishedSize != st.Size {
		return nil, fmt.Errorf("anchor: consistency proof to %d: the published tree_heads log has size %d of %d", newSize, st.PublishedSize, st.Size)
	}
	return tiles.NewReader(j.cfg.Store, Prefix, tiles.Tree{Size: st.Size, Root: st.Root}, j.cache).ConsistencyProof(ctx, oldSize, newSize)
}

// SetPublishers sets the publishers, which may need the job itself (the witness
// asks it for consistency proofs). Call it before Run.
func (j *Job) SetPublishers(ps []Publisher) { j.cfg.Publishers = ps }
