package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/catalog"
	"github.com/sealtrail/sealtrail/tlog"
)

// bigExportEvents is the size of TestAPIExportScale's stream: the acceptance's 100,000.
// The server it runs is built without -race, so the run takes about the same time
// with and without the race detector (the server's sealing is the bottleneck).
const bigExportEvents = 100_000

// TestAPIExportScale seals bigExportEvents events into one stream, exports the stream as NDJSON and verifies the export offline
// with `sealtrail verify full` against the signed tree head, and GET /verify rebuilds
// it. It measures the server's peak resident memory (VmHWM) over an export of 10,000
// events and over the export of the whole stream, each on a freshly started process,
// and requires the second within twice the first, and its growth below the size of
// the export itself: the export streams page by page and never holds the stream. Last, a
// payload edited in the middle of the stream is named by /verify, and cuts the export
// off there.
//
// The server and the verifier are built without -race here even when the tests run
// with it: the race detector's shadow memory would swamp the measurement, and the
// subject is the shipped binary's memory, not its synchronisation (which every other
// test covers with -race).
func TestAPIExportScale(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := goBuild(t, dir, "sealtraild-norace", "github.com/sealtrail/sealtrail/cmd/sealtraild")
	verifier := buildVerifier(t, dir)
	// GOGC=100: the subject is whether the export holds the stream, not the collector's
	// target; at the service's default (GOGC=400, docs/operations.md "Memory") garbage
	// may reach four times the live heap between collections, which moves the peak
	// by about as much as the export's whole size and makes the second bound a coin toss.
	env := []string{"SEALTRAIL_RATE_LIMIT=100000000", "GOGC=100"}
	s := startBin(t, bin, dir, env)
	p := s.newProject("scale")

	start := time.Now()
	ingestMany(t, s, p.key[catalog.ScopeWrite], bigExportEvents)
	t.Logf("sealed %d events in %s (%.0f/s)", bigExportEvents, time.Since(start).Round(time.Millisecond),
		float64(bigExportEvents)/time.Since(start).Seconds())
	sth := s.sth(p.all, "events")
	if sth.TreeSize != bigExportEvents {
		t.Fatalf("tree size %d, want %d", sth.TreeSize, bigExportEvents)
	}
	start = time.Now()
	if rec := s.receipt(p.all, "events"); !rec.Valid || rec.CheckedCount != bigExportEvents || rec.RootHash != sth.RootHash {
		t.Fatalf("/verify of %d events: %+v", bigExportEvents, rec)
	}
	t.Logf("GET /verify of %d events: %s", bigExportEvents, time.Since(start).Round(time.Millisecond))

	// Export memory: each export on a fresh process, so neither inherits the other's
	// heap (or the ingest's).
	file := filepath.Join(dir, "small.ndjson")
	s.stop()
	s = startBin(t, bin, dir, env)
	small := s.exportRSS(p.all, "/export?format=json&max=10000", file)
	s.stop()
	file = filepath.Join(dir, "all.ndjson")
	s = startBin(t, bin, dir, env)
	all := s.exportRSS(p.all, "/export?format=json", file)
	s.stop()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("export peak RSS: %d KiB for 10,000 events (idle %d KiB), %d KiB for %d events (idle %d KiB, export %d KiB)",
		small.peak, small.idle, all.peak, bigExportEvents, all.idle, fi.Size()>>10)
	if all.peak > 2*small.peak || int64(all.peak-all.idle) > fi.Size()>>10 {
		t.Fatalf("export memory grows with the stream: peak %d KiB for %d events vs %d KiB for 10,000; the export is %d KiB",
			all.peak, bigExportEvents, small.peak, fi.Size()>>10)
	}
	if n := countLines(t, file); n != bigExportEvents {
		t.Fatalf("export has %d lines, want %d", n, bigExportEvents)
	}

	start = time.Now()
	r := verifyFull(t, verifier, file, sth, nil)
	t.Logf("sealtrail verify full of %d events: %s", bigExportEvents, time.Since(start).Round(time.Millisecond))
	if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("OK: %d events rebuild to size %d, root %s", bigExportEvents, bigExportEvents, sth.RootHash)) {
		t.Fatalf("sealtrail verify full: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A payload in the middle of the stream no longer decrypts: /verify names it, and
	// the export, already under way when it reaches it, is cut off rather than
	// completed without it, so the offline verifier cannot be handed a short file.
	broken := uint64(bigExportEvents / 2)
	(&sealedStream{dataDir: s.dataDir, pid: p.id}).flipCiphertextAt(t, broken)
	s = startBin(t, bin, dir, env)
	if rec := s.receipt(p.all, "events"); rec.Valid || rec.FirstBreak == nil || rec.FirstBreak.Reason != tlog.BreakContentTampered ||
		rec.FirstBreak.Sequence != broken {
		t.Fatalf("/verify after a ciphertext edit at %d: %+v", broken, rec.FirstBreak)
	}
	cut := filepath.Join(dir, "cut.ndjson")
	res, complete := s.download(p.all, "/export?format=json", cut)
	if res.StatusCode != http.StatusOK || complete {
		t.Fatalf("export over an undecryptable payload: %d, complete %v; want a cut-off 200", res.StatusCode, complete)
	}
	if n := countLines(t, cut); uint64(n) >= broken {
		t.Fatalf("cut-off export has %d lines, want fewer than %d", n, broken)
	}
	if r := verifyFull(t, verifier, cut, sth, nil); r.code == 0 {
		t.Fatalf("the cut-off export verifies:\n%s", r.stdout)
	}
	s.stop()
}

// startBin starts `bin serve` (a sealtraild built by the test) in dir, like startServer.
func startBin(t *testing.T, bin, dir string, env []string) *server {
	t.Helper()
	s := &server{t: t, dataDir: filepath.Join(dir, "data"), exited: make(chan struct{})}
	s.cmd = exec.Command(bin, "serve", "--listen", "127.0.0.1:0")
	s.cmd.Dir = dir
	s.cmd.Env = childEnv(env...)
	return s.launch()
}

// ingestMany seals n small unsigned events with concurrent POST /log requests over
// kept-alive connections.
func ingestMany(t *testing.T, s *server, token string, n int) {
	t.Helper()
	const workers = 128
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxConnsPerHost: workers}}
	defer client.CloseIdleConnections()
	var next atomic.Int64
	var (
		mu       sync.Mutex
		firstErr error
	)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				body := fmt.Sprintf(`{"action":"bulk.write","actor":{"type":"user","id":"u%d"},"metadata":{"i":%d}}`, i%97, i)
				err := postOnce(client, s.base+"/api/v1/log", token, body)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("event %d: %w", i, err)
					}
					mu.Unlock()
					next.Store(int64(n)) // stop everyone
					return
				}
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		t.Fatal(firstErr)
	}
}

func postOnce(client *http.Client, url, token, body string) error {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusAccepted || !bytes.Contains(data, []byte(`"status":"sealed"`)) {
		return fmt.Errorf("POST /log: %d %s", res.StatusCode, data)
	}
	return nil
}

// rssSample is a process's resident memory in KiB: idle before an export, and its
// high-water mark (VmHWM, the kernel's exact peak, no sampling) after it.
type rssSample struct{ idle, peak int }

// exportRSS downloads an export to file and returns the server's memory around it.
func (s *server) exportRSS(token, pathQuery, file string) rssSample {
	s.t.Helper()
	idle := procStatusKB(s.t, s.cmd.Process.Pid, "VmRSS")
	res, complete := s.download(token, pathQuery, file)
	if res.StatusCode != http.StatusOK || !complete {
		s.t.Fatalf("GET %s: %d, complete %v", pathQuery, res.StatusCode, complete)
	}
	return rssSample{idle: idle, peak: procStatusKB(s.t, s.cmd.Process.Pid, "VmHWM")}
}

// procStatusKB reads a KiB field such as VmRSS from /proc/<pid>/status.
func procStatusKB(t *testing.T, pid int, field string) int {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatalf("/proc/%d/status %s: %v", pid, field, err)
			}
			return kb
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

func countLines(t *testing.T, file string) int {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 4<<20)
	for sc.Scan() {
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
