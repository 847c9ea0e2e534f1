package sequencer

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tlog"
)

// Catalog is the part of the SQL catalog the sequencer uses. Implementations:
// catalog/postgres and catalog/sqlite.
type Catalog interface {
	// SealGroup is the group commit: it locks the project-streams no one else holds,
	// runs fn and commits every batch it returns in one transaction (see
	// catalog.Catalog).
	SealGroup(ctx context.Context, logs []catalog.LogID, fn catalog.SealGroupFunc) ([]catalog.Sealed, error)
	// Publish runs fn under the project-stream's publish lock (distinct from the seal
	// lock, held across replicas) with the checkpoint read under that lock. If fn
	// returns nil, published_size becomes cp.Size before the lock is released.
	Publish(ctx context.Context, log catalog.LogID, fn func(ctx context.Context, cp catalog.Checkpoint) error) (catalog.Checkpoint, error)
	// PublishGroup is Publish for many project-streams: one call of fn with all their
	// checkpoints, and their published sizes recorded in one write (a publication
	// round, pubround.go).
	PublishGroup(ctx context.Context, logs []catalog.LogID, fn catalog.PublishGroupFunc) ([]catalog.Published, error)
	Checkpoint(ctx context.Context, log catalog.LogID) (catalog.Checkpoint, error)
	ListUnpublished(ctx context.Context) ([]catalog.Checkpoint, error)
	BatchesCovering(ctx context.Context, log catalog.LogID, from, to uint64) ([]catalog.Batch, error)
	EventsByID(ctx context.Context, log catalog.LogID, ids []string) (map[string]catalog.Event, error)
	EventSequence(ctx context.Context, log catalog.LogID, id string) (uint64, error)
	QueryEvents(ctx context.Context, q catalog.Query) ([]catalog.Event, error)
	// EventLeaves reads the sequences and leaf hashes of index rows (Rebuild).
	EventLeaves(ctx context.Context, log catalog.LogID, after uint64, limit int) ([]catalog.EventLeaf, error)
}

// Keyring encrypts and decrypts payloads. Ciphertexts are bound to aad. Open returns
// an error wrapping ErrShredded when the data key was destroyed by retention.
type Keyring interface {
	Seal(ctx context.Context, log catalog.LogID, at time.Time, plaintext, aad []byte) ([]byte, error)
	Open(ctx context.Context, log catalog.LogID, ciphertext, aad []byte) ([]byte, error)
}

// batchKeyring is a Keyring that can encrypt a whole batch under one derived key
// (*keyring.Keyring is one); the sequencer uses it when it can.
type batchKeyring interface {
	SealerAt(ctx context.Context, log catalog.LogID, at time.Time) (*keyring.Sealer, error)
}

// keyPreparer is a Keyring that can make ready the data keys of many project-streams
// at once (*keyring.Keyring is one): a tick of new streams then creates their keys in
// one catalog write instead of one each.
type keyPreparer interface {
	PrepareAt(ctx context.Context, logs []catalog.LogID, at time.Time) error
}

// ErrShredded is what a Keyring's Open wraps for a payload whose key was destroyed.
var ErrShredded = keyring.ErrShredded

// Config configures a Sequencer.
type Config struct {
	Catalog Catalog
	Store   tiles.Store
	Keyring Keyring
	// Origin is the service origin; checkpoints are named Origin/<projectId>/<stream>.
	Origin string
	// Key signs checkpoint notes.
	Key ed25519.PrivateKey
	// MaxBatch bounds the events sealed in one batch (default 10,000).
	MaxBatch int
	// MaxAge is how long the first event of a batch may wait for others before the
	// batch is sealed (default 0: seal as soon as the previous batch is committed, so
	// batches grow with load by themselves). Longer suits S3 or GCS, where each
	// object write costs money.
	MaxAge time.Duration
	// PublishInterval is the least time between two publications (tiles, entry
	// bundles, checkpoint note) of one project-stream (default 200ms). Events are
	// acknowledged at their commit; publication follows, coalescing every batch
	// committed meanwhile, so a busy stream rewrites its partial tiles a few times a
	// second and a quiet one publishes once after its last batch.
	PublishInterval time.Duration
	// MaxPublishing bounds the project-streams of one publication round (default
	// 1,000): the streams due are published together, one round at a time, with one
	// catalog write and one store write; the rest wait for the next round, coalescing
	// more batches meanwhile.
	MaxPublishing int
	// PublishBudget bounds the publications per second, over the whole process, of
	// the project-streams with fewer than 256 leaves (a tile) to publish (default
	// DefaultPublishBudget; negative: no bound). With n such streams due, each
	// publishes about every max(PublishInterval, n/PublishBudget): the mirror work
	// per second (each publication creates a few files: partial tiles, the note)
	// stays flat however many tenants are active. A busier stream is not held back.
	// Proofs, signed heads and verification are served from committed state and do
	// not wait for publication; Close publishes everything at once.
	PublishBudget int
	// MaxPending bounds the events waiting for one project-stream (default 100,000).
	// Beyond it Submit fails fast with a *BusyError.
	MaxPending int
	// IdleTimeout drops a project-stream's sequencer after this long without events
	// (default one minute).
	IdleTimeout time.Duration
	// SealTimeout bounds one batch's seal, from lock to commit (default 30s).
	SealTimeout time.Duration
	Logger      *slog.Logger
	// Registerer receives the sequencer's metrics (batch sizes, seal and publish
	// latency, queue depth); nil keeps them unregistered.
	Registerer prometheus.Registerer
	// Now returns the current time (tests); default time.Now.
	Now func() time.Time
}

func (c *Config) setDefaults() error {
	if c.Catalog == nil || c.Store == nil || c.Keyring == nil || c.Key == nil {
		return errors.New("sequencer: Catalog, Store, Keyring and Key are required")
	}
	if c.Origin == "" {
		return errors.New("sequencer: Origin is required")
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = 10_000
	}
	if c.MaxPending <= 0 {
		c.MaxPending = 100_000
	}
	if c.PublishInterval <= 0 {
		c.PublishInterval = 200 * time.Millisecond
	}
	if c.MaxPublishing <= 0 {
		c.MaxPublishing = 1000
	}
	if c.PublishBudget == 0 {
		c.PublishBudget = DefaultPublishBudget
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = time.Minute
	}
	if c.SealTimeout <= 0 {
		c.SealTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Entry is one event to seal.
type Entry struct {
	// ID is the client-minted id of a signed event; empty for unsigned events, which
	// get a server-minted id.
	ID string
	// Nonce is the client's blinding nonce of a signed event; nil to mint one.
	Nonce *tlog.Nonce
	// Payload is the RFC 8785 payload object.
	Payload []byte
	// SigningKeyID and Signature are set together for a customer-signed event; the
	// caller has verified the signature over the commitment of Nonce and Payload.
	SigningKeyID, Signature string
	// Index holds the values queries filter on.
	Index Index
}

// Index holds the queryable projections of an event.
type Index struct {
	Action, Status       string
	ActorType, ActorID   string
	TargetType, TargetID string
}

// Result is the outcome of a sealed entry.
type Result struct {
	ID       string
	Sequence uint64
	LeafHash tlog.Hash
	// Duplicate is true when a signed event with the same id and bytes had been sealed
	// before; Result then describes that original event.
	Duplicate bool
}

// BusyError means the project-stream has too many events waiting; retry after
// RetryAfter. errors.Is(err, ErrBusy) holds.
type BusyError struct{ RetryAfter time.Duration }

func (e *BusyError) Error() string {
	return fmt.Sprintf("sequencer: too many events waiting; retry after %s", e.RetryAfter)
}

// Is makes errors.Is(err, ErrBusy) true.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// Errors Submit returns, wrapped; the API maps them to statuses.
var (
	// ErrBusy: back-pressure (see BusyError).
	ErrBusy = errors.New("sequencer: busy")
	// ErrIDConflict: a signed event reuses an id already sealed with other bytes.
	ErrIDConflict = errors.New("sequencer: event id already used with different content")
	// ErrSealFailed: the batch failed before its commit; nothing was recorded.
	ErrSealFailed = errors.New("sequencer: seal failed; nothing was recorded")
	// ErrNotPublished: the event is committed, but materializing it has not finished
	// within the caller's deadline. Submit no longer returns it (events are
	// acknowledged at their commit); it stays for callers that map it.
	ErrNotPublished = errors.New("sequencer: event committed but not yet published")
	// ErrClosed: the sequencer is shutting down.
	ErrClosed = errors.New("sequencer: closed")
	// errFatal marks errors that stop a project-stream's sequencer (a fork).
	errFatal = errors.New("fatal")
)

// Sequencer seals events into per project-stream tile logs.
type Sequencer struct {
	cfg Config

	mu     sync.Mutex
	logs   map[catalog.LogID]*logSequencer // active project-streams
	closed bool
	wg     sync.WaitGroup // running logSequencer loops

	group   *committer
	pub     *publisher // the publication rounds
	cache   *payloadCache
	edges   *edgeCache
	leaves  *leafMemo  // leafmemo.go
	heads   *headCache // heads.go
	ids     *idCache   // ids.go
	tiles   *tiles.TileCache
	metrics *metrics
}

// New returns a Sequencer. Call Recover before serving, and Close to drain.
func New(cfg Config) (*Sequencer, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	tc, err := tiles.NewTileCache(4096)
	if err != nil {
		return nil, err
	}
	s := &Sequencer{cfg: cfg, logs: map[catalog.LogID]*logSequencer{}, cache: newPayloadCache(payloadCacheBytes), edges: newEdgeCache(), leaves: newLeafMemo(),
		heads: newHeadCache(cfg.Catalog), ids: newIDCache(), tiles: tc}
	s.metrics = newMetrics(s, cfg.Registerer)
	s.group = newCommitter(s)
	s.pub = newPublisher(s)
	return s, nil
}

// Submit seals e into the log and returns once it is committed (durable, in the
// tree, provable at once; tiles and the checkpoint note follow), or with an error: a
// *BusyError (nothing queued), ErrIDConflict, ErrSealFailed (nothing recorded) or
// ctx's error while the batch is still being sealed (outcome unknown; a signed event
// may be retried).
func (s *Sequencer) Submit(ctx context.Context, log catalog.LogID, e Entry) (Result, error) {
	if err := log.Validate(); err != nil {
		return Result{}, err
	}
	ctx, span := startSubmit(ctx, log, 1)
	defer span.End()
	for {
		ls, err := s.logSequencer(log)
		if err != nil {
			endSubmit(span, Result{}, err)
			return Result{}, err
		}
		w, err := ls.enqueue(ctx, e)
		if errors.Is(err, errRetired) {
			continue // the sequencer went idle between lookup and enqueue
		}
		if err != nil {
			endSubmit(span, Result{}, err)
			return Result{}, err
		}
		res, err := w.wait(ctx)
		endSubmit(span, res, err)
		return res, err
	}
}

// logSequencer returns the running sequencer of log, starting one if needed.
func (s *Sequencer) logSequencer(log catalog.LogID) (*logSequencer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if ls, ok := s.logs[log]; ok {
		return ls, nil
	}
	ls := newLogSequencer(s, log)
	s.logs[log] = ls
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ls.run()
	}()
	return ls, nil
}

// retire removes ls from the active set if it is still idle; it reports whether it did.
func (s *Sequencer) retire(ls *logSequencer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !ls.retireIfIdle() {
		return false
	}
	if s.logs[ls.log] == ls {
		delete(s.logs, ls.log)
	}
	return true
}

// Close stops accepting events, seals and publishes what is pending, and waits for
// every project-stream's loops to finish or ctx to end.
func (s *Sequencer) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.pub.flush() // what is left publishes now, whatever the budget
	for _, ls := range s.logs {
		ls.drain()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); s.group.stop(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("sequencer: close: %w", ctx.Err())
	}
}

// Recover publishes every project-stream whose committed size is ahead of what is
// materialized in object storage: the repair of a crash between commit and publish.
func (s *Sequencer) Recover(ctx context.Context) error {
	cps, err := s.cfg.Catalog.ListUnpublished(ctx)
	if err != nil {
		return fmt.Errorf("sequencer: recover: %w", err)
	}
	for _, cp := range cps {
		s.cfg.Logger.InfoContext(ctx, "recovering unpublished batches", "log", cp.Log.String(),
			"published", cp.PublishedSize, "size", cp.Size)
	}
	// In publication rounds of at most MaxPublishing streams, as in service.
	for chunk := range slices.Chunk(cps, s.cfg.MaxPublishing) {
		logs := make([]catalog.LogID, len(chunk))
		writers := make([]*tiles.Writer, len(chunk))
		for i, cp := range chunk {
			logs[i], writers[i] = cp.Log, tiles.NewWriter(s.cfg.Store, prefixOf(cp.Log), s.cfg.Logger)
		}
		out, err := s.publishGroup(ctx, logs, writers)
		if err != nil {
			return fmt.Errorf("sequencer: recover: %w", err)
		}
		for _, p := range out {
			if p.Err != nil {
				return fmt.Errorf("sequencer: recover %s: %w", p.Checkpoint.Log, p.Err)
			}
		}
	}
	return nil
}

// prefixOf returns the object prefix of a log. LogIDs are validated before they reach
// here, and project ids are key-safe, so the error cannot happen for a stored log.
func prefixOf(log catalog.LogID) tiles.Prefix {
	p, err := tiles.StreamPrefix(log.ProjectID, string(log.Stream))
	if err != nil {
		return tiles.Prefix("invalid/" + string(log.Stream) + "/")
	}
	return p
}
