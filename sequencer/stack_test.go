package sequencer

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/keyring"
	"github.com/sealtrail/sealtrail/tiles"
	"github.com/sealtrail/sealtrail/tiles/fs"
	"github.com/sealtrail/sealtrail/tlog"
)

// This file holds the real stack the process-level tests run: a PostgreSQL or SQLite
// catalog, the filesystem store, the real keyring (a KEK file, data keys in the
// catalog), and the child-process entry point that the crash and replica tests
// start the test binary as.

// childEnv carries a stackConfig (JSON) when the test binary runs as a sequencer child.
const childEnv = "SEALTRAIL_SEQUENCER_CHILD"

func TestMain(m *testing.M) {
	if cfg := os.Getenv(childEnv); cfg != "" {
		os.Exit(childMain(cfg))
	}
	code := m.Run()
	if benchRoot != "" && os.Getenv("SEALTRAIL_BENCH_DIR") == "" {
		os.RemoveAll(benchRoot)
	}
	if millionLog.dir != "" {
		os.RemoveAll(millionLog.dir)
	}
	os.Exit(code)
}

// stackConfig describes one process's stack; every process of a test uses the same
// one (the name aside), so they share the catalog, the store and all keys.
type stackConfig struct {
	Catalog   string `json:"catalog"` // "postgres" or "sqlite"
	DSN       string `json:"dsn"`     // PostgreSQL DSN or SQLite file
	Store     string `json:"store"`   // fs store directory
	KEK       string `json:"kek"`     // KEK file
	Key       string `json:"key"`     // hex seed of the service's checkpoint key
	ClientKey string `json:"client"`  // hex seed of the customer key signing even tags
	MaxBatch  int    `json:"maxBatch"`
	// PublishIntervalMS sets Config.PublishInterval (0: the default).
	PublishIntervalMS int `json:"publishIntervalMs"`
	// Prove makes the child verify each acknowledged event's inclusion proof, as
	// served at once, before it prints the ack (see childMain).
	Prove bool `json:"prove"`
}

// newStackConfig returns a config with fresh keys, a store and a KEK file under dir.
func newStackConfig(t testing.TB, kind, dsn, dir string) stackConfig {
	t.Helper()
	_, key, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	_, client, err := tlog.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return stackConfig{Catalog: kind, DSN: dsn, Store: filepath.Join(dir, "store"), KEK: filepath.Join(dir, "kek"),
		Key: hex.EncodeToString(key.Seed()), ClientKey: hex.EncodeToString(client.Seed())}
}

func (c stackConfig) key() ed25519.PrivateKey { return seedKey(c.Key) }

func (c stackConfig) clientKey() ed25519.PrivateKey { return seedKey(c.ClientKey) }

func seedKey(h string) ed25519.PrivateKey {
	seed, err := hex.DecodeString(h)
	if err != nil || len(seed) != ed25519.SeedSize {
		panic("bad key seed in stack config")
	}
	return ed25519.NewKeyFromSeed(seed)
}

// signingKeys is the customer key lookup for Rebuild.
func (c stackConfig) signingKeys(id string) []ed25519.PublicKey {
	if id != stackSigningKeyID {
		return nil
	}
	return []ed25519.PublicKey{c.clientKey().Public().(ed25519.PublicKey)}
}

// stack is one process's sequencer over the real drivers.
type stack struct {
	cfg   stackConfig
	cat   catalog.Catalog
	store *fs.Store
	keys  *keyring.Keyring
	seq   *Sequencer
}

// openStack opens the catalog, the store, the keyring and a Sequencer. wrap, if not
// nil, may wrap the catalog and store the sequencer sees (benchmarks count calls).
func openStack(ctx context.Context, cfg stackConfig, wrap func(*Config)) (*stack, error) {
	var (
		cat catalog.Catalog
		err error
	)
	switch cfg.Catalog {
	case "postgres":
		cat, err = postgres.Open(ctx, cfg.DSN, postgres.Options{})
	case "sqlite":
		cat, err = sqlite.Open(ctx, cfg.DSN, sqlite.Options{})
	default:
		err = fmt.Errorf("unknown catalog %q", cfg.Catalog)
	}
	if err != nil {
		return nil, err
	}
	store, err := fs.New(cfg.Store)
	if err != nil {
		cat.Close()
		return nil, err
	}
	kek, err := keyring.LoadOrCreateKEKFile(cfg.KEK)
	if err != nil {
		cat.Close()
		return nil, err
	}
	keys := keyring.New(cat, kek, keyring.Options{})
	sc := Config{Catalog: cat, Store: store, Keyring: keys, Origin: testOrigin, Key: cfg.key(), MaxBatch: cfg.MaxBatch,
		PublishInterval: time.Duration(cfg.PublishIntervalMS) * time.Millisecond}
	if wrap != nil {
		wrap(&sc)
	}
	seq, err := New(sc)
	if err != nil {
		cat.Close()
		return nil, err
	}
	return &stack{cfg: cfg, cat: cat, store: store, keys: keys, seq: seq}, nil
}

func (s *stack) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = s.seq.Close(ctx)
	s.cat.Close()
}

// mustOpenStack opens a stack for the test process, closed at cleanup.
func mustOpenStack(t testing.TB, cfg stackConfig) *stack {
	t.Helper()
	st, err := openStack(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.close)
	return st
}

// stackLog is the project-stream the process-level tests write.
var stackLog = catalog.LogID{ProjectID: "prj_proc", Stream: catalog.StreamEvents}

const stackSigningKeyID = "sk_proc"

// tagEntry is the event a test sends under tag: the same bytes every time, so a
// signed event can be retried after a crash. Even tags are customer-signed with a
// client-minted id (evt_t<tag>); odd tags are unsigned and get a server-minted id.
// The actor id u<tag> names the tag inside the encrypted payload.
func tagEntry(client ed25519.PrivateKey, tag uint64) Entry {
	payload, err := tlog.Canonicalize(fmt.Appendf(nil,
		`{"action":"proc.test","actor":{"type":"user","id":"u%d"},"status":"success","metadata":{"tag":%d}}`, tag, tag))
	if err != nil {
		panic(err)
	}
	e := Entry{Payload: payload, Index: Index{Action: "proc.test", Status: "success", ActorType: "user", ActorID: fmt.Sprintf("u%d", tag)}}
	if tag%2 == 0 {
		n := tlog.Nonce(sha256.Sum256(fmt.Appendf(nil, "nonce/%d", tag)))
		e.ID, e.Nonce = fmt.Sprintf("evt_t%d", tag), &n
		e.SigningKeyID, e.Signature = stackSigningKeyID, tlog.SignEvent(client, e.ID, tlog.Commitment(n, payload))
	}
	return e
}

// childMain is the sequencer child: it opens the stack, calls Recover, prints
// "ready", then submits one event per stdin line (a tag), concurrently, printing
// "ack <tag> <id> <seq> <leafhash> <dup>" once Submit returns success, or
// "err <tag> <error>". With cfg.Prove it first fetches the event's inclusion proof
// from the sequencer and verifies it against the served tree (an "err" line if it
// does not verify), and appends " <unmaterialized>" to the ack: 1 if the event's
// tiles were not yet written when its proof verified. At EOF it waits for its submissions, closes the sequencer and
// prints "done". Every line is one write, so a kill never leaves half an ack.
func childMain(cfgJSON string) int {
	var cfg stackConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "child config:", err)
		return 2
	}
	ctx := context.Background()
	st, err := openStack(ctx, cfg, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		return 2
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = st.seq.Recover(rctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "child recover:", err)
		return 2
	}
	var mu sync.Mutex
	say := func(format string, args ...any) {
		line := fmt.Sprintf(format+"\n", args...)
		mu.Lock()
		defer mu.Unlock()
		_, _ = os.Stdout.WriteString(line)
	}
	say("ready")
	client := cfg.clientKey()
	var wg sync.WaitGroup
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		tag, err := strconv.ParseUint(strings.TrimSpace(sc.Text()), 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "child: bad line", sc.Text())
			return 2
		}
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			r, err := st.seq.Submit(ctx, stackLog, tagEntry(client, tag))
			if err != nil {
				say("err %d %s", tag, strings.ReplaceAll(err.Error(), "\n", " "))
				return
			}
			dup := 0
			if r.Duplicate {
				dup = 1
			}
			if cfg.Prove {
				unmat, err := proveAck(ctx, st, r)
				if err != nil {
					say("err %d proof: %s", tag, strings.ReplaceAll(err.Error(), "\n", " "))
					return
				}
				say("ack %d %s %d %s %d %d", tag, r.ID, r.Sequence, tlog.Hex(r.LeafHash), dup, unmat)
				return
			}
			say("ack %d %s %d %s %d", tag, r.ID, r.Sequence, tlog.Hex(r.LeafHash), dup)
		})
	}
	wg.Wait()
	st.close()
	say("done")
	return 0
}

// proveAck verifies r's inclusion proof as the sequencer serves it right after the
// acknowledgement, and returns 1 if the tiles did not cover r's leaf at that moment.
func proveAck(ctx context.Context, st *stack, r Result) (int, error) {
	cp, err := st.cat.Checkpoint(ctx, stackLog)
	if err != nil {
		return 0, err
	}
	rd, tree, err := st.seq.Proofs(ctx, stackLog)
	if err != nil {
		return 0, err
	}
	p, err := rd.InclusionProof(ctx, r.Sequence-1, tree.Size)
	if err != nil {
		return 0, err
	}
	if err := tlog.VerifyInclusion(r.LeafHash, r.Sequence-1, tree.Size, p, tree.Root); err != nil {
		return 0, err
	}
	if cp.PublishedSize < r.Sequence {
		return 1, nil
	}
	return 0, nil
}

// ack is one acknowledgement a child printed.
type ack struct {
	tag      uint64
	id       string
	seq      uint64
	leafHash tlog.Hash
	dup      bool
	unmat    bool // proved before its tiles were materialized (stackConfig.Prove)
}

func parseAck(line string) (ack, error) {
	f := strings.Fields(line)
	if len(f) < 6 || len(f) > 7 || f[0] != "ack" {
		return ack{}, fmt.Errorf("not an ack line: %q", line)
	}
	var a ack
	var err error
	if a.tag, err = strconv.ParseUint(f[1], 10, 64); err != nil {
		return a, err
	}
	a.id = f[2]
	if a.seq, err = strconv.ParseUint(f[3], 10, 64); err != nil {
		return a, err
	}
	if a.leafHash, err = tlog.ParseHash(f[4]); err != nil {
		return a, err
	}
	a.dup = f[5] == "1"
	a.unmat = len(f) == 7 && f[6] == "1"
	return a, nil
}

// verifyStack checks the log the children left, through a fresh stack in this
// process (which recovers first, as a restarted process would): every acknowledged
// event is in the catalog at its acknowledged sequence with its leaf hash and its
// payload, index rows are exactly 1..N, inclusion proofs of acknowledged events
// verify, the checkpoint note opens at the committed tree, and a full rebuild
// reproduces the live root. It returns N.
func verifyStack(t *testing.T, cfg stackConfig, acks []ack) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	st := mustOpenStack(t, cfg)
	if err := st.seq.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	cp, err := st.cat.Checkpoint(ctx, stackLog)
	if err != nil {
		t.Fatal(err)
	}
	if cp.PublishedSize != cp.Size {
		t.Fatalf("after Recover: published %d, committed %d", cp.PublishedSize, cp.Size)
	}
	// Index rows: exactly 1..N.
	next := uint64(1)
	for {
		page, err := st.cat.QueryEvents(ctx, catalog.Query{Log: stackLog, Cursor: next - 1, Limit: catalog.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			if e.Sequence != next {
				t.Fatalf("index row %d where %d was due (size %d)", e.Sequence, next, cp.Size)
			}
			next++
		}
		if len(page) < catalog.MaxLimit {
			break
		}
	}
	if next != cp.Size+1 {
		t.Fatalf("index rows end at %d, checkpoint size %d", next-1, cp.Size)
	}

	// Acknowledged events: in the catalog where acknowledged; one sequence per id.
	rd, tree, err := st.seq.Proofs(ctx, stackLog)
	if err != nil {
		t.Fatal(err)
	}
	if tree.Size != cp.Size || tree.Root != cp.Root {
		t.Fatalf("tree %d %s, checkpoint %d %s", tree.Size, tlog.Hex(tree.Root), cp.Size, tlog.Hex(cp.Root))
	}
	byID := map[string]catalog.Event{}
	for i := 0; i < len(acks); i += 1000 {
		ids := make([]string, 0, 1000)
		for _, a := range acks[i:min(i+1000, len(acks))] {
			ids = append(ids, a.id)
		}
		m, err := st.cat.EventsByID(ctx, stackLog, ids)
		if err != nil {
			t.Fatal(err)
		}
		maps.Copy(byID, m)
	}
	// One acknowledged event by EventByID too, the single-id path.
	if len(acks) > 0 {
		if _, err := st.cat.EventByID(ctx, stackLog, acks[0].id); err != nil {
			t.Fatalf("acknowledged event %s: %v", acks[0].id, err)
		}
	}
	bySeq := map[uint64]ack{}
	for _, a := range acks {
		e, ok := byID[a.id]
		if !ok {
			t.Fatalf("acknowledged event %s (tag %d, sequence %d) is not in the catalog", a.id, a.tag, a.seq)
		}
		if e.Sequence != a.seq || e.LeafHash != a.leafHash {
			t.Fatalf("acknowledged %s at %d, catalog has it at %d (leaf hashes equal: %v)", a.id, a.seq, e.Sequence, e.LeafHash == a.leafHash)
		}
		if prev, ok := bySeq[a.seq]; ok && (prev.id != a.id || !(prev.dup || a.dup)) {
			t.Fatalf("sequence %d acknowledged twice: %+v and %+v", a.seq, prev, a)
		}
		bySeq[a.seq] = a
		p, err := rd.InclusionProof(ctx, a.seq-1, tree.Size)
		if err != nil {
			t.Fatal(err)
		}
		if err := tlog.VerifyInclusion(a.leafHash, a.seq-1, tree.Size, p, tree.Root); err != nil {
			t.Fatalf("inclusion of acknowledged %d: %v", a.seq, err)
		}
	}
	// Their payloads decrypt to what was sent.
	seqs := make([]uint64, 0, len(bySeq))
	for s := uint64(1); s <= cp.Size; s++ {
		if _, ok := bySeq[s]; ok {
			seqs = append(seqs, s)
		}
	}
	for len(seqs) > 0 {
		chunk := seqs[:min(len(seqs), 2000)]
		seqs = seqs[len(chunk):]
		evs, err := st.seq.Events(ctx, stackLog, chunk)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			a := bySeq[e.Leaf.Sequence]
			want := tagEntry(cfg.clientKey(), a.tag)
			if e.Payload == nil || string(e.Payload) != string(want.Payload) {
				t.Fatalf("sequence %d holds payload %s, acknowledged tag %d", e.Leaf.Sequence, e.Payload, a.tag)
			}
		}
	}

	note, err := st.store.Get(ctx, prefixOf(stackLog).Key(tiles.CheckpointPath))
	if err != nil {
		t.Fatal(err)
	}
	ncp, err := tlog.OpenCheckpoint(cfg.key().Public().(ed25519.PublicKey), tlog.CheckpointOrigin(testOrigin, stackLog.ProjectID, string(stackLog.Stream)), note)
	if err != nil || ncp.Size != cp.Size || ncp.Root != cp.Root {
		t.Fatalf("checkpoint note %d %s (%v); catalog %d %s", ncp.Size, tlog.Hex(ncp.Root), err, cp.Size, tlog.Hex(cp.Root))
	}
	res, err := st.seq.Rebuild(ctx, stackLog, cfg.signingKeys)
	if err != nil {
		t.Fatal(err)
	}
	if res.Break != nil || res.Checked != cp.Size || res.Size != cp.Size || res.Root != res.Live.Root || res.Live.Root != cp.Root {
		t.Fatalf("rebuild: break %v, checked %d, size %d, root %s; live %d %s", res.Break, res.Checked, res.Size,
			tlog.Hex(res.Root), res.Live.Size, tlog.Hex(res.Live.Root))
	}
	return cp.Size
}
