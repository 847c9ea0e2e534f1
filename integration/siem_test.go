package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/internal/testenv"
)

// Issue 20's acceptance: rsyslog with TLS receives every event of a bounded load, in
// order, across a kill -9 of the service; at least once, with no gap, proven by
// sequence.

// syslogSeq reads the sequence and tree size of Sealtrail's structured data.
var syslogSeq = regexp.MustCompile(`^<110>1 \S+ \S+ sealtrail - events \[sealtrail@32473 seq="(\d+)" leafHash="[0-9a-f]{64}" treeSize="(\d+)"`)

func TestSIEMSyslogAcrossKill(t *testing.T) {
	onEachCatalog(t, func(t *testing.T, c apiCatalog) {
		rs := testenv.StartRsyslog(t)
		dir := t.TempDir()
		// A short lease, so the restarted process (a new lease owner) takes the
		// destination over within a second and a half of the kill.
		env := c.env("SEALTRAIL_SIEM_POLL_MS=50", "SEALTRAIL_SIEM_LEASE_TTL_MS=1500", "SEALTRAIL_SIEM_BATCH_SIZE=25")
		s := startServer(t, serveOpts{dir: dir, env: env})
		p := s.newProject("siem")
		caFile := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(caFile, []byte(rs.CAPEM), 0o600); err != nil {
			t.Fatal(err)
		}
		if r := s.admin("ops", "siem", "create", "--project", p.id, "--name", "x"); r.code != 2 || !strings.Contains(r.stderr, "--kind") {
			t.Fatalf("siem create without --kind: exit %d: %s", r.code, r.stderr)
		}
		if r := s.admin("ops", "siem", "create", "--project", p.id, "--name", "x", "--kind", "syslog", "--address", "nowhere"); r.code != 1 || !strings.Contains(r.stderr, "HTTP 400") {
			t.Fatalf("siem create with a bad address: exit %d: %s", r.code, r.stderr)
		}
		out := s.mustCLI("ops", "siem", "create", "--project", p.id, "--name", "rsyslog", "--kind", "syslog",
			"--format", "ocsf", "--address", rs.Addr, "--ca-cert", caFile, "--hostname", "sealtrail-it")
		dest, _ := out["destination"].(map[string]any)
		destID, _ := dest["id"].(string)
		if destID == "" || dest["state"] != "active" {
			t.Fatalf("siem create: %v", out)
		}

		const total, beforeKill = 300, 180
		for i := range beforeKill {
			s.mustLog(p.all, fmt.Sprintf("document.created.%d", i))
		}
		// kill -9 while delivery is under way: the cursor in the catalog is all that
		// survives.
		if err := s.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-s.exited
		delivered := len(rs.Lines(t))
		t.Logf("%s: rsyslog had %d of %d events at the kill", c.name, delivered, beforeKill)

		s = startServer(t, serveOpts{dir: dir, env: env})
		for i := beforeKill; i < total; i++ {
			s.mustLog(p.all, fmt.Sprintf("document.created.%d", i))
		}
		var lines []string
		for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			lines = rs.Lines(t)
			if distinctSeqs(t, lines) >= total {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("rsyslog received %d distinct of %d events (%d lines)", distinctSeqs(t, lines), total, len(lines))
			}
		}
		checkAtLeastOnceInOrder(t, lines, total)

		// The operator sees the cursor at the end and no failures.
		st := s.mustAdmin(http.StatusOK, http.MethodGet, "/projects/"+p.id+"/siem-destinations/"+destID, "ops", nil)
		for deadline := time.Now().Add(10 * time.Second); st.body["cursor"] != float64(total); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("destination after the load: %s", st.raw)
			}
			st = s.mustAdmin(http.StatusOK, http.MethodGet, "/projects/"+p.id+"/siem-destinations/"+destID, "ops", nil)
		}
		if st.body["state"] != "active" || st.body["attempts"] != float64(0) {
			t.Fatalf("destination after the load: %s", st.raw)
		}
		s.stop()
	})
}

// distinctSeqs counts the distinct sequences in rsyslog's lines.
func distinctSeqs(t *testing.T, lines []string) int {
	seen := map[uint64]bool{}
	for _, l := range lines {
		if m := syslogSeq.FindStringSubmatch(l); m != nil {
			n, _ := strconv.ParseUint(m[1], 10, 64)
			seen[n] = true
		}
	}
	return len(seen)
}

// checkAtLeastOnceInOrder: every line is one of ours with treeSize >= seq; each
// sequence follows the previous one or replays an earlier one (a resend after the
// kill, at least once), never skips ahead; and the distinct sequences are 1..total.
func checkAtLeastOnceInOrder(t *testing.T, lines []string, total int) {
	t.Helper()
	var high, prev uint64
	replays := 0
	seen := map[uint64]bool{}
	for i, l := range lines {
		m := syslogSeq.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("line %d is not a Sealtrail RFC 5424 message: %q", i, l)
		}
		seq, _ := strconv.ParseUint(m[1], 10, 64)
		size, _ := strconv.ParseUint(m[2], 10, 64)
		if size < seq {
			t.Fatalf("line %d: treeSize %d < sequence %d", i, size, seq)
		}
		switch {
		case seq > high+1:
			t.Fatalf("gap: line %d has sequence %d after %d", i, seq, high)
		case i > 0 && seq != prev+1 && seq > prev:
			t.Fatalf("line %d: sequence %d skips ahead of %d within a resend", i, seq, prev)
		case i > 0 && seq <= prev:
			replays++ // a resend (after the kill) starts here
		}
		seen[seq] = true
		prev, high = seq, max(high, seq)
	}
	if high != uint64(total) || len(seen) != total {
		t.Fatalf("highest %d, distinct %d, want %d", high, len(seen), total)
	}
	t.Logf("%d lines for %d events; %d resend(s)", len(lines), total, replays)
}
