package loadtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat (100 on every
// Linux architecture Go supports).
const clockTicks = 100

// Usage is a process's cumulative CPU time (µs) and bytes written to storage.
type Usage struct {
	CPUMicros  int64
	WriteBytes int64
}

// Sub returns u - v.
func (u Usage) Sub(v Usage) Usage {
	return Usage{CPUMicros: u.CPUMicros - v.CPUMicros, WriteBytes: u.WriteBytes - v.WriteBytes}
}

// ReadUsage reads pid's utime+stime and write_bytes from /proc.
func ReadUsage(pid int) (Usage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, fmt.Errorf("loadtest: %w", err)
	}
	// The command name (field 2) may hold spaces; the fields after its ')' start at
	// field 3 (state), so utime and stime (fields 14 and 15) are at 11 and 12.
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	f := strings.Fields(string(rest))
	if len(f) < 13 {
		return Usage{}, fmt.Errorf("loadtest: /proc/%d/stat has %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return Usage{}, fmt.Errorf("loadtest: /proc/%d/stat: bad utime/stime", pid)
	}
	u := Usage{CPUMicros: (ut + st) * 1_000_000 / clockTicks}
	io, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return Usage{}, fmt.Errorf("loadtest: %w", err)
	}
	for line := range strings.Lines(string(io)) {
		if v, ok := strings.CutPrefix(line, "write_bytes:"); ok {
			if u.WriteBytes, err = strconv.ParseInt(strings.TrimSpace(v), 10, 64); err != nil {
				return Usage{}, fmt.Errorf("loadtest: /proc/%d/io: %w", pid, err)
			}
		}
	}
	return u, nil
}

// WALPosition returns PostgreSQL's current WAL insert position in bytes.
func WALPosition(ctx context.Context, dsn string) (int64, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, fmt.Errorf("loadtest: connect: %w", err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint").Scan(&n); err != nil {
		return 0, fmt.Errorf("loadtest: wal position: %w", err)
	}
	return n, nil
}

// SelfCPU returns the CPU time (user and system) this process used so far, for
// benchmarks that report CPU per operation: on a shared machine it varies much less
// than the wall time.
func SelfCPU() (time.Duration, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("loadtest: getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

// MachineCPU is the whole machine's cumulative CPU time in USER_HZ ticks, summed over
// its cores: Busy of Total.
type MachineCPU struct {
	Busy, Total int64
}

// ReadMachineCPU reads the machine's CPU time from /proc/stat.
func ReadMachineCPU() (MachineCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return MachineCPU{}, fmt.Errorf("loadtest: %w", err)
	}
	return parseMachineCPU(b)
}

// parseMachineCPU parses the first line of /proc/stat, "cpu" and then user, nice,
// system, idle, iowait, irq, softirq, steal (and guest times, already in user and
// nice): busy is all but idle and iowait.
func parseMachineCPU(stat []byte) (MachineCPU, error) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return MachineCPU{}, fmt.Errorf("loadtest: /proc/stat: no cpu line with 8 times")
	}
	var m MachineCPU
	for i, s := range f[1:9] {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil || v < 0 {
			return MachineCPU{}, fmt.Errorf("loadtest: /proc/stat: bad cpu time %q", s)
		}
		m.Total += v
		if i != 3 && i != 4 { // idle, iowait
			m.Busy += v
		}
	}
	return m, nil
}

// Sub returns m - o.
func (m MachineCPU) Sub(o MachineCPU) MachineCPU {
	return MachineCPU{Busy: m.Busy - o.Busy, Total: m.Total - o.Total}
}
