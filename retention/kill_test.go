package retention_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/catalog/postgres"
	"github.com/sealtrail/sealtrail/catalog/sqlite"
	"github.com/sealtrail/sealtrail/internal/testenv"
	"github.com/sealtrail/sealtrail/retention"
	"github.com/sealtrail/sealtrail/tiles/fs"
)

// The kill -9 test: a child process (this test binary, re-run in child mode) runs a
// retention pass over a SQLite or PostgreSQL catalog and a filesystem store; the parent kills it with
// SIGKILL after a random number of shredding steps, then checks that no destroyed key
// lost a held event and that the retention.shredded records match what was destroyed,
// finishes the pass itself and checks again.

const killChildEnv = "SEALTRAIL_RETENTION_KILL_CHILD"

// killEpochs are the months the test's events are received in; each is shredded.
var killEpochs = []time.Time{
	time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC),
	time.Date(2026, 2, 5, 0, 0, 0, 0, time.UTC),
	time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC),
}

// killNow is the clock of the shredding pass: every epoch above is past 1 day.
var killNow = time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)

type killSetup struct {
	Dir     string `json:"dir"`
	DSN     string `json:"dsn"` // PostgreSQL; "" for SQLite in Dir
	KEK     []byte `json:"kek"`
	Project string `json:"project"`
}

// openKill opens the stack of ks in this process; closeDB closes its catalog (also at
// test end), so that no background work of this process (SQLite's term indexer) still
// writes while a child process has the catalog: SQLite is one process per file.
func openKill(t *testing.T, ks killSetup, now time.Time) (st *stack, closeDB func()) {
	t.Helper()
	var db catalog.RetentionCatalog
	var err error
	if ks.DSN != "" {
		db, err = postgres.Open(context.Background(), ks.DSN, postgres.Options{})
	} else {
		db, err = sqlite.Open(context.Background(), filepath.Join(ks.Dir, "catalog.db"), sqlite.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	closeDB = sync.OnceFunc(db.Close)
	t.Cleanup(closeDB)
	store, err := fs.New(filepath.Join(ks.Dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	return newStackWith(t, db, store, ks.KEK, now), closeDB
}

// TestKillChild is the child's body; it does nothing unless run by TestKillShred.
func TestKillChild(t *testing.T) {
	raw := os.Getenv(killChildEnv)
	if raw == "" {
		t.Skip("runs only as TestKillShred's child process")
	}
	var ks killSetup
	if err := json.Unmarshal([]byte(raw), &ks); err != nil {
		t.Fatal(err)
	}
	st, _ := openKill(t, ks, killNow)
	job, err := retention.New(retention.Config{Catalog: st.cat, Reader: st.seq, Auditor: st.ctl, Keyring: st.kr,
		Store: st.store, Now: st.clock.Now, Holder: "test", AfterStep: func(step int) {
			fmt.Printf("step %d\n", step)
			time.Sleep(time.Millisecond)
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := job.RunOnce(context.Background()); err != nil {
		t.Fatal(err)
	}
	fmt.Println("done")
}

func TestKillShred(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 20 processes")
	}
	const rounds = 20
	for _, kind := range []string{"sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			for round := range rounds {
				dsn := ""
				if kind == "postgres" {
					dsn = testenv.PostgresDB(t)
				}
				killRound(t, round, dsn)
			}
		})
	}
}

func killRound(t *testing.T, round int, dsn string) {
	ctx := context.Background()
	ks := killSetup{Dir: t.TempDir(), DSN: dsn, KEK: make([]byte, 32)}
	_, _ = rand.Read(ks.KEK)
	// Set up in this process: events in three months, a hold in each, retention 1 day.
	func() {
		st, closeDB := openKill(t, ks, killEpochs[0])
		defer closeDB()
		p, err := st.ctl.CreateProject(ctx, operator, "kill")
		if err != nil {
			t.Fatal(err)
		}
		ks.Project = p.ID
		var held []string
		for e, at := range killEpochs {
			for i := range 6 {
				st.clock.Set(at.Add(time.Duration(i) * time.Hour))
				res := st.submit(t, p.ID, e*10+i, nil, "")
				if i == 2 || (e == 1 && i == 4) {
					held = append(held, res.ID)
				}
			}
		}
		if _, err := st.ctl.CreateHold(ctx, operator, p.ID, held, "kill test"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.ctl.SetRetention(ctx, operator, p.ID, catalog.StreamEvents, 1); err != nil {
			t.Fatal(err)
		}
		if err := st.seq.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}()

	// Kill the child after a random number of steps (3 epochs x 5 steps; 15 lets it finish).
	n, _ := rand.Int(rand.Reader, big.NewInt(16))
	killAfter := int(n.Int64())
	raw, _ := json.Marshal(ks)
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+string(raw))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	steps, killed := 0, false
	var said []string // the child's other output, shown if it fails
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if !strings.HasPrefix(sc.Text(), "step ") {
			said = append(said, sc.Text())
		} else {
			steps++
			if steps >= killAfter && !killed {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
	}
	werr := cmd.Wait()
	if !killed && werr != nil {
		t.Fatalf("round %d: child failed after %d steps: %v\n%s", round, steps, werr, strings.Join(said, "\n"))
	}
	t.Logf("round %d: killed after %d steps (target %d, killed %v)", round, steps, killAfter, killed)

	st, _ := openKill(t, ks, killNow)
	checkKill(t, st, ks.Project, fmt.Sprintf("round %d after the kill", round))
	if _, err := st.job.RunOnce(ctx); err != nil {
		t.Fatalf("round %d: finishing pass: %v", round, err)
	}
	checkKill(t, st, ks.Project, fmt.Sprintf("round %d after the finishing pass", round))
	keys, err := st.cat.ListDataKeys(ctx, catalog.LogID{ProjectID: ks.Project, Stream: catalog.StreamEvents})
	if err != nil {
		t.Fatal(err)
	}
	destroyed := 0
	for _, k := range keys {
		if k.Destroyed() {
			destroyed++
		}
	}
	if destroyed != len(killEpochs) {
		t.Fatalf("round %d: %d epochs destroyed after the finishing pass, want %d", round, destroyed, len(killEpochs))
	}
}

// checkKill checks the two properties: every destroyed epoch's held events still read
// with their payload, and the retention.shredded records are one per destroyed epoch
// (at most one per epoch; a record may precede its destruction) naming its range.
func checkKill(t *testing.T, st *stack, project, when string) {
	t.Helper()
	ctx := context.Background()
	log := catalog.LogID{ProjectID: project, Stream: catalog.StreamEvents}
	keys, err := st.cat.ListDataKeys(ctx, log)
	if err != nil {
		t.Fatal(err)
	}
	holds, err := st.cat.ListLegalHolds(ctx, project)
	if err != nil || len(holds) != 1 {
		t.Fatalf("%s: holds %v, %v", when, holds, err)
	}
	heldRows, err := st.cat.EventsByID(ctx, log, holds[0].EventIDs)
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string][]map[string]any{}
	for _, r := range st.auditRecords(t, project, retention.ActionShredded) {
		meta, _ := r["metadata"].(map[string]any)
		ep, _ := meta["epoch"].(string)
		recs[ep] = append(recs[ep], meta)
	}
	for _, k := range keys {
		start, end, ok := retention.EpochBounds(k.Epoch)
		if !ok {
			continue // the hold key
		}
		if len(recs[k.Epoch]) > 1 {
			t.Fatalf("%s: %d records for epoch %s", when, len(recs[k.Epoch]), k.Epoch)
		}
		sp, err := st.cat.EventSpan(ctx, log, start, end)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs[k.Epoch]) == 1 {
			m := recs[k.Epoch][0]
			if m["firstSequence"] != float64(sp.First) || m["lastSequence"] != float64(sp.Last) || m["count"] != float64(sp.Count) {
				t.Fatalf("%s: record %v, epoch %s has %+v", when, m, k.Epoch, sp)
			}
		}
		if !k.Destroyed() {
			continue
		}
		if len(recs[k.Epoch]) != 1 {
			t.Fatalf("%s: epoch %s destroyed without a record", when, k.Epoch)
		}
		var seqs []uint64
		for _, e := range heldRows {
			if e.Sequence >= sp.First && e.Sequence <= sp.Last {
				seqs = append(seqs, e.Sequence)
			}
		}
		slices.Sort(seqs)
		evs, err := st.seq.Events(ctx, log, seqs)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.Nonce == nil || len(e.Payload) == 0 {
				t.Fatalf("%s: held event %d of destroyed epoch %s lost its payload", when, e.Leaf.Sequence, k.Epoch)
			}
		}
		if len(evs) == 0 {
			t.Fatalf("%s: epoch %s has no held event; the test wants one", when, k.Epoch)
		}
	}
}
