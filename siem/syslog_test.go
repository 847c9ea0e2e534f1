package siem

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sealtrail/sealtrail/internal/testenv"
)

// seqRE reads the sequence parameter of Sealtrail's structured data.
var seqRE = regexp.MustCompile(`\[sealtrail@32473 seq="(\d+)" leafHash="([0-9a-f]{64})" treeSize="(\d+)"`)

// syslogReceived turns rsyslog's received lines into one batch per line.
func syslogReceived(t *testing.T, lines []string) *received {
	t.Helper()
	got := newReceived()
	for _, l := range lines {
		m := seqRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("received line without Sealtrail's structured data: %q", l)
		}
		seq, _ := strconv.ParseUint(m[1], 10, 64)
		size, _ := strconv.ParseUint(m[3], 10, 64)
		if size < seq {
			t.Fatalf("treeSize %d < seq %d: %q", size, seq, l)
		}
		if !strings.HasPrefix(l, "<110>1 ") {
			t.Fatalf("not an RFC 5424 message with PRI 110: %q", l)
		}
		got.add([]uint64{seq})
	}
	return got
}

// TestSyslogTLS streams to a real rsyslogd over TLS (imtcp + gtls, throwaway CA) in
// each format; rsyslog must receive every event once, in order.
func TestSyslogTLS(t *testing.T) {
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			rs := testenv.StartRsyslog(t)
			s := newStack(t)
			s.seal(120)
			st, _, err := s.admin.Create(s.ctx, operator, s.project, Spec{Name: "rsyslog", Kind: KindSyslog, Format: format,
				Settings: Settings{Address: rs.Addr, CACert: rs.CAPEM, Hostname: "sealtrail-test"}})
			if err != nil {
				t.Fatal(err)
			}
			s.runner("r1", nil)
			s.waitCursor(st.ID, 120)
			var lines []string
			for deadline := time.Now().Add(30 * time.Second); len(lines) < 120; time.Sleep(20 * time.Millisecond) {
				lines = rs.Lines(t)
				if time.Now().After(deadline) {
					t.Fatalf("rsyslog received %d lines, want 120", len(lines))
				}
			}
			syslogReceived(t, lines).checkOrder(t, 120, true)
		})
	}
}

// TestSyslogUntrusted: a receiver whose certificate does not chain to the configured
// CA gets nothing, and the failure is recorded on the destination.
func TestSyslogUntrusted(t *testing.T) {
	rs := testenv.StartRsyslog(t)
	other := testenv.StartRsyslog(t) // another throwaway CA
	s := newStack(t)
	s.seal(3)
	st, _, err := s.admin.Create(s.ctx, operator, s.project, Spec{Name: "rsyslog", Kind: KindSyslog, Format: FormatCEF,
		Settings: Settings{Address: rs.Addr, CACert: other.CAPEM}})
	if err != nil {
		t.Fatal(err)
	}
	s.runner("r1", func(c *RunnerConfig) { c.MaxAttempts = 2 })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		d, err := s.admin.Get(s.ctx, s.project, st.ID)
		if err != nil {
			t.Fatal(err)
		}
		if d.State == "dead_letter" {
			if !strings.Contains(d.LastError, "certificate") || d.Cursor != 0 {
				t.Fatalf("dead letter %+v", d)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not dead-lettered: %+v", d)
		}
	}
	if n := len(rs.Lines(t)); n != 0 {
		t.Fatalf("untrusted receiver got %d lines", n)
	}
}
