package catalogtest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/sealtrail/sealtrail/catalog"
)

// CrashLog is the project-stream the crash helpers seal into.
var CrashLog = catalog.LogID{ProjectID: "prj_crash", Stream: catalog.StreamEvents}

// SealUntilKilled is the body of a crash test's child process: it seals batches of 1 to
// 250 events into CrashLog forever, printing "acked <size>" after each commit returns,
// until the parent kills it. It exits with status 2 on error.
func SealUntilKilled(db catalog.Catalog) {
	ctx := context.Background()
	for i := 0; ; i++ {
		n := 1 + (i*157)%250
		cp, err := db.Seal(ctx, CrashLog, batchFor("c", n, nil))
		if err != nil {
			fmt.Fprintln(os.Stderr, "seal:", err)
			os.Exit(2)
		}
		// An acknowledgement: from here on the batch must survive.
		fmt.Printf("acked %d\n", cp.Size)
	}
}

// KillAfterAcks starts cmd (a child running SealUntilKilled), SIGKILLs it once it has
// acknowledged acks seals, at whatever point of its next seal it has reached, and
// returns the last size it acknowledged.
func KillAfterAcks(t *testing.T, cmd *exec.Cmd, acks int) uint64 {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var last uint64
	sc := bufio.NewScanner(out)
	for n := 0; n < acks && sc.Scan(); n++ {
		size, err := strconv.ParseUint(strings.TrimPrefix(sc.Text(), "acked "), 10, 64)
		if err != nil {
			cmd.Process.Kill()
			t.Fatalf("child printed %q", sc.Text())
		}
		last = size
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Acknowledgements printed before the kill landed count too.
	for sc.Scan() {
		if size, err := strconv.ParseUint(strings.TrimPrefix(sc.Text(), "acked "), 10, 64); err == nil {
			last = size
		}
	}
	cmd.Wait() // the error is the kill
	if last == 0 {
		t.Fatal("the child acknowledged nothing")
	}
	return last
}

// CheckConsistent checks that the committed state of log hangs together: index rows
// exactly 1..Size, batches tiling 1..Size, nothing beyond Size. It returns the
// checkpoint.
func CheckConsistent(t *testing.T, db catalog.Catalog, log catalog.LogID) catalog.Checkpoint {
	t.Helper()
	ctx := ctxT(t)
	cp := mustCheckpoint(t, db, log)
	next := uint64(1)
	for {
		page, err := db.QueryEvents(ctx, catalog.Query{Log: log, Cursor: next - 1, Limit: catalog.MaxLimit})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			if e.Sequence != next {
				t.Fatalf("%s: index row %d where %d was due (checkpoint size %d)", log, e.Sequence, next, cp.Size)
			}
			next++
		}
		if len(page) < catalog.MaxLimit {
			break
		}
	}
	if next != cp.Size+1 {
		t.Fatalf("%s: index rows end at %d, checkpoint size is %d", log, next-1, cp.Size)
	}
	bs, err := db.BatchesCovering(ctx, log, 1, cp.Size+1000)
	if err != nil {
		t.Fatal(err)
	}
	next = 1
	for _, b := range bs {
		if b.First != next {
			t.Fatalf("%s: batch at %d where %d was due", log, b.First, next)
		}
		next = b.End()
	}
	if next != cp.Size+1 {
		t.Fatalf("%s: batches end at %d, checkpoint size is %d", log, next-1, cp.Size)
	}
	if cp.Root != H(fmt.Sprintf("root %d", cp.Size)) {
		t.Fatalf("%s: checkpoint root is not the one committed with size %d", log, cp.Size)
	}
	return cp
}
