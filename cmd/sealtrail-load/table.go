package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sealtrail/sealtrail/internal/loadtest"
)

// row is one measured case.
type row struct {
	round        int
	system, name string
	res          loadtest.Result
	usage        loadtest.Usage
	wal          int64
}

// table prints the rows as a Markdown table as they are measured.
type table struct {
	rows   []row
	rounds bool // the rows have a round column
}

func (t *table) header(o options) {
	fmt.Printf("sealtrail-load: %s measured per case after %s warm-up, %d-byte events, closed loop, loopback", o.duration, o.warmup, o.size)
	if o.rounds > 1 {
		fmt.Printf("; %d rounds, each case on every server in turn (reversed every other round)", o.rounds)
	}
	fmt.Print("\n\n")
	t.rounds = o.rounds > 1
	head, rule := "| system | case |", "|---|---|"
	if t.rounds {
		head, rule = "| round "+head, "|---:"+rule
	}
	fmt.Println(head + " req/s | events/s | p50 ms | p99 ms | server CPU µs/req | CPU µs/event | bytes written/event | drained / unfinished / errors |")
	fmt.Println(rule + "---:|---:|---:|---:|---:|---:|---:|---:|")
}

// single reports whether l sends one event per request.
func single(l loadtest.Load) bool {
	_, events := l.Body(0)
	return events == 1
}

// run warms up, then measures one case against p (and PostgreSQL's WAL when dsn is
// set), and prints its row.
func (t *table) run(ctx context.Context, o options, round int, system, name string, p *proc, dsn string, l loadtest.Load) {
	if o.only != nil && !o.only.MatchString(system+", "+name) {
		return
	}
	if len(l.Tokens) > 1 && l.Body != nil && single(l) {
		// Every key sends one event first: a project's first event creates its stream's
		// number, checkpoint row and data key (a few transactions each) and its first
		// publication creates the stream's tile directories. That is one-time set-up,
		// which a 1 s warm-up of a thousand fresh projects does not cover, so the
		// many-tenant cases measured it as if it were the steady state. waitPublished
		// then lets those first publications finish. (The batch cases run after the
		// single-event ones, on the same server and keys.)
		first := l
		first.Count, first.Duration = len(l.Tokens), time.Minute
		t0 := time.Now()
		res, err := first.Run(ctx)
		if err != nil || res.Errors > 0 || res.Unfinished > 0 {
			fmt.Fprintf(os.Stderr, "%s %s: first request of each key: %v %d errors (%s), %d unfinished\n",
				system, name, err, res.Errors, res.FirstError, res.Unfinished)
		}
		fmt.Fprintf(os.Stderr, "  %s %s: the first request of each of %d keys took %.2f s, p99 %.1f ms\n",
			system, name, len(l.Tokens), time.Since(t0).Seconds(), float64(res.P99.Microseconds())/1000)
	}
	if p.token != "" {
		if err := waitPublished(ctx, p, time.Minute); err != nil {
			fmt.Fprintf(os.Stderr, "%s %s: %v; measuring anyway\n", system, name, err)
		}
	}
	// Whatever another server still does after its own case (PostgreSQL's checkpoints
	// and autovacuum, Tessera's integration) must not land in this one's window.
	if waited, err := quiet(ctx, quietLimit); err != nil {
		fmt.Fprintf(os.Stderr, "  %s %s: %v; measuring anyway\n", system, name, err)
	} else if waited > 2*time.Second {
		fmt.Fprintf(os.Stderr, "  %s %s: the machine went quiet %.1f s before the case\n", system, name, waited.Seconds())
	}
	w := l
	w.Duration = o.warmup
	if _, err := w.Run(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "%s %s: warm-up: %v\n", system, name, err)
	}
	pid := p.cmd.Process.Pid
	u0, err0 := loadtest.ReadUsage(pid)
	var wal0 int64
	if dsn != "" {
		wal0, _ = loadtest.WALPosition(ctx, dsn)
	}
	l.Duration = o.duration
	if l.Drain <= 0 {
		l.Drain = 30 * time.Second
	}
	prof := fileName(system + " " + name)
	if t.rounds {
		prof += fmt.Sprintf("_round%d", round)
	}
	var profiled chan struct{}
	if o.profile != "" && p.token != "" {
		profiled = make(chan struct{})
		go func() {
			defer close(profiled)
			if err := fetchProfile(p, o.duration, filepath.Join(o.profile, prof+".pprof")); err != nil {
				fmt.Fprintf(os.Stderr, "  %s %s: profile: %v\n", system, name, err)
			}
		}()
	}
	res, err := l.Run(ctx)
	if profiled != nil {
		<-profiled
		if err := fetchTo(p, "/metrics", filepath.Join(o.profile, prof+".metrics")); err != nil {
			fmt.Fprintf(os.Stderr, "  %s %s: metrics: %v\n", system, name, err)
		}
	}
	var settled time.Duration
	var (
		uRun    loadtest.Usage
		errURun error = errors.New("not read")
	)
	if p.token != "" {
		// The case pays for the work it deferred (merges, the term index, WAL
		// checkpoints, publication), and the next one starts on an idle server.
		// With -profile, a second profile covers the first settleProfile of it.
		uRun, errURun = loadtest.ReadUsage(pid)
		if o.profile != "" {
			profiled = make(chan struct{})
			go func() {
				defer close(profiled)
				if err := fetchProfile(p, settleProfile, filepath.Join(o.profile, prof+".settle.pprof")); err != nil {
					fmt.Fprintf(os.Stderr, "  %s %s: settle profile: %v\n", system, name, err)
				}
			}()
		}
		t0 := time.Now()
		if err := settle(ctx, p, settleLimit); err != nil {
			fmt.Fprintf(os.Stderr, "  %s %s: %v\n", system, name, err)
		}
		settled = time.Since(t0)
		if o.profile != "" {
			<-profiled
		}
	}
	u1, err1 := loadtest.ReadUsage(pid)
	// The split is printed with -profile, and whenever the settling took long: the
	// case's CPU per event then includes much deferred work, and the split says how
	// much.
	if (o.profile != "" || settled > 2*time.Second) && errURun == nil && err1 == nil {
		run, after := uRun.Sub(u0), u1.Sub(uRun)
		fmt.Fprintf(os.Stderr, "  %s %s: server CPU %.2f s and %.1f MB written in the run and drain, %.2f s and %.1f MB while settling\n", system, name,
			float64(run.CPUMicros)/1e6, float64(run.WriteBytes)/1e6, float64(after.CPUMicros)/1e6, float64(after.WriteBytes)/1e6)
	}
	if settled > 2*time.Second {
		fmt.Fprintf(os.Stderr, "  %s %s: the server went idle %.1f s after the run\n", system, name, settled.Seconds())
	}
	r := row{round: round, system: system, name: name, res: res, usage: u1.Sub(u0)}
	if dsn != "" {
		if wal1, err := loadtest.WALPosition(ctx, dsn); err == nil {
			r.wal = wal1 - wal0
		}
	}
	if res.Unfinished > 0 {
		fmt.Fprintf(os.Stderr, "  %s %s: %d requests unanswered %s after the run\n", system, name, res.Unfinished, l.Drain)
	}
	if err != nil || err0 != nil || err1 != nil {
		fmt.Fprintf(os.Stderr, "%s %s: %v %v %v\n", system, name, err, err0, err1)
	}
	t.rows = append(t.rows, r)
	per := func(v int64, n int) string {
		if n == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f", float64(v)/float64(n))
	}
	// The usage covers the run and its drain, so it is shared by every acknowledged
	// request, drained ones included.
	reqs, evs := res.Requests+res.Drained, res.Events+res.DrainedEvents
	bytesPer := "-"
	if system != "trivial handler" {
		bytesPer = per(r.usage.WriteBytes+r.wal, evs)
	}
	p99 := fmt.Sprintf("%.1f", ms(res.P99))
	if res.Unfinished*100 >= reqs+res.Unfinished && res.Unfinished > 0 {
		p99 = fmt.Sprintf("> %.0f", ms(l.Duration+l.Drain))
	}
	if t.rounds {
		fmt.Printf("| %d ", round)
	}
	fmt.Printf("| %s | %s | %.0f | %.0f | %.1f | %s | %s | %s | %s | %d / %d / %d |\n", system, name, res.ReqPerSec(), res.EventsPerSec(),
		ms(res.P50), p99, per(r.usage.CPUMicros, reqs), per(r.usage.CPUMicros, evs), bytesPer, res.Drained, res.Unfinished, res.Errors)
	if res.FirstError != "" {
		fmt.Fprintf(os.Stderr, "  %s %s: first error: %s\n", system, name, res.FirstError)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// ratios prints Sealtrail's single-event rates against Tessera and the ceiling at each
// concurrency, PostgreSQL against the embedded default, and the many-tenant case
// against one project: each from the rows of one round, and with several rounds
// their median and every round's value.
func (t *table) ratios(w io.Writer, rounds int) {
	find := func(round int, system, name string) *row {
		for i := range t.rows {
			if r := &t.rows[i]; r.round == round && r.system == system && r.name == name && r.res.Requests > 0 {
				return r
			}
		}
		return nil
	}
	var rs ratioSet
	for _, r := range t.rows {
		if r.res.Requests == 0 {
			continue
		}
		var n, c, leaves int
		var by string
		scan := func(format string, args ...any) bool {
			_, err := fmt.Sscanf(r.name, format, args...)
			return err == nil
		}
		switch {
		case scan("single, 1 project, c=%d", &c) && strings.HasPrefix(r.system, "Sealtrail"):
			peer := fmt.Sprintf("single, 1 stream, c=%d", c)
			at := fmt.Sprintf("%s, one project, c=%d: ", r.system, c)
			if tr := find(r.round, "trivial handler", peer); tr != nil {
				rs.add(at+"rate, × the trivial handler's", "%.2f×", r.res.ReqPerSec()/tr.res.ReqPerSec())
				rs.add(at+"p99, × the trivial handler's", "%.1f×", float64(r.res.P99)/float64(max(tr.res.P99, 1)))
			}
			if ts := find(r.round, "Tessera POSIX", peer); ts != nil {
				rs.add(at+"rate, × Tessera's", "%.2f×", r.res.ReqPerSec()/ts.res.ReqPerSec())
			}
			if e := find(r.round, "Sealtrail embedded", r.name); e != nil && r.system == "Sealtrail PostgreSQL" {
				rs.add(at+"rate, % of the embedded default's", "%.0f%%", 100*r.res.ReqPerSec()/e.res.ReqPerSec())
			}
		case scan("single, %d projects, c=%d", &n, &c):
			if one := find(r.round, r.system, fmt.Sprintf("single, 1 project, c=%d", c)); one != nil {
				at := fmt.Sprintf("%s, %d projects, c=%d: ", r.system, n, c)
				rs.add(at+"rate, % of one project's", "%.0f%%", 100*r.res.ReqPerSec()/one.res.ReqPerSec())
				rs.add(at+"p99, × one project's", "%.1f×", float64(r.res.P99)/float64(max(one.res.P99, 1)))
			}
		case scan("inclusion proof, %d leaves, by %s c=%d", &leaves, &by, &c) && r.system == "Sealtrail embedded":
			if tr := find(r.round, "trivial handler", fmt.Sprintf("GET, c=%d", c)); tr != nil {
				at := fmt.Sprintf("%s, %s: ", r.system, r.name)
				rs.add(at+"proofs/s", "%.0f", r.res.ReqPerSec())
				rs.add(at+"rate, × the trivial handler's GET rate", "%.2f×", r.res.ReqPerSec()/tr.res.ReqPerSec())
				rs.add(at+"p99, × the trivial handler's GET p99", "%.1f×", float64(r.res.P99)/float64(max(tr.res.P99, 1)))
			}
		}
	}
	fmt.Fprintln(w)
	rs.print(w, rounds)
}

// ratioSet collects named ratios, one value per round, in the order first added.
type ratioSet struct {
	names   []string
	formats map[string]string
	values  map[string][]float64
}

func (s *ratioSet) add(name, format string, v float64) {
	if s.values == nil {
		s.formats, s.values = map[string]string{}, map[string][]float64{}
	}
	if _, ok := s.values[name]; !ok {
		s.names = append(s.names, name)
		s.formats[name] = format
	}
	s.values[name] = append(s.values[name], v)
}

// print writes one line per ratio: its value, or with several rounds the median of
// its values and the values in round order.
func (s *ratioSet) print(w io.Writer, rounds int) {
	for _, name := range s.names {
		f, vs := s.formats[name], s.values[name]
		if rounds == 1 || len(vs) == 1 {
			fmt.Fprintf(w, "%s "+f+"\n", name, vs[0])
			continue
		}
		each := make([]string, len(vs))
		for i, v := range vs {
			each[i] = fmt.Sprintf(f, v)
		}
		fmt.Fprintf(w, "%s median "+f+" of %d rounds (%s)\n", name, median(vs), len(vs), strings.Join(each, ", "))
	}
}

// median returns the median of vs (the mean of the middle two of an even count).
func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// fetchProfile writes sealtraild's CPU profile over the next d to file.
func fetchProfile(p *proc, d time.Duration, file string) error {
	return fetchTo(p, fmt.Sprintf("/debug/pprof/profile?seconds=%d", max(1, int(d/time.Second))), file)
}

// fetchTo writes what GET path answers (with the operator token) to file.
func fetchTo(p *proc, path, file string) error {
	resp, err := get(p, path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fileName turns a case name into a file name.
func fileName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// get sends GET path to p with its operator token and returns the 200 response.
func get(p *proc, path string) (*http.Response, error) {
	req, err := http.NewRequest("GET", "http://"+p.addr+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return resp, nil
}

// settleLimit bounds how long a case waits for the server to go idle after its run.
const settleLimit = 2 * time.Minute

// settleProfile is how long the -profile option's second profile of a Sealtrail case
// runs, from the end of the drain: the work the case deferred (docs/performance.md).
const settleProfile = 12 * time.Second

// idleCPU is the CPU share of one core below which a server counts as idle.
const idleCPU = 0.03

// settle waits, at most limit, until sealtraild has nothing waiting for publication
// and used less than idleCPU of a core over half a second.
func settle(ctx context.Context, p *proc, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	if err := waitPublished(ctx, p, limit); err != nil {
		return err
	}
	pid := p.cmd.Process.Pid
	share, err := waitIdle(ctx, time.Until(deadline), idleCPU, func() (int64, int64, error) {
		u, err := loadtest.ReadUsage(pid)
		return u.CPUMicros, time.Now().UnixMicro(), err // one core's capacity: the wall time
	})
	if errors.Is(err, errBusy) {
		return fmt.Errorf("still busy (%.0f%% of a core) %v after the run", 100*share, limit)
	}
	return err
}

// quietLimit bounds how long a case waits for the machine to go quiet before it
// starts, and quietShare is the share of all the machine's cores below which it is
// quiet (the generator and every server idle between cases).
const (
	quietLimit = 30 * time.Second
	quietShare = 0.10
)

// quiet waits, at most limit, until the whole machine used less than quietShare of
// its cores over half a second, and returns how long it waited.
func quiet(ctx context.Context, limit time.Duration) (time.Duration, error) {
	t0 := time.Now()
	share, err := waitIdle(ctx, limit, quietShare, func() (int64, int64, error) {
		m, err := loadtest.ReadMachineCPU()
		return m.Busy, m.Total, err
	})
	if errors.Is(err, errBusy) {
		err = fmt.Errorf("the machine still used %.0f%% of its cores %v before the case", 100*share, limit)
	}
	return time.Since(t0), err
}

// errBusy is waitIdle's error when limit passed first.
var errBusy = errors.New("still busy")

// waitIdle reads sample every half second, a cumulative busy time and the capacity it
// is a share of (in one unit), until the share used since the previous read is below
// share, or returns errBusy with the last share once limit has passed.
func waitIdle(ctx context.Context, limit time.Duration, share float64, sample func() (busy, capacity int64, err error)) (float64, error) {
	deadline := time.Now().Add(limit)
	busy0, cap0, err := sample()
	if err != nil {
		return 0, err
	}
	for {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		busy, capacity, err := sample()
		if err != nil {
			return 0, err
		}
		used := float64(busy-busy0) / float64(max(1, capacity-cap0))
		if capacity > cap0 && used < share {
			return used, nil
		}
		if time.Now().After(deadline) {
			return used, errBusy
		}
		busy0, cap0 = busy, capacity
	}
}

// waitPublished waits, at most limit, until sealtraild has no project-stream
// waiting for publication (sealtrail_publish_queue_streams 0 at two reads 200 ms
// apart): the publication budget defers quiet streams' mirror work, such as that of
// the thousand projects created before the first case, and a case must not measure
// what the one before it (or the set-up) left to do.
func waitPublished(ctx context.Context, p *proc, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	zeros := 0
	for {
		n, err := publishQueue(p)
		if err != nil {
			return err
		}
		if n != 0 {
			zeros = 0
		} else if zeros++; zeros == 2 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%v streams still waiting for publication after %v", n, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// publishQueue reads sealtrail_publish_queue_streams from p's /metrics.
func publishQueue(p *proc) (float64, error) {
	resp, err := get(p, "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	const name = "sealtrail_publish_queue_streams "
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/metrics has no %s", strings.TrimSpace(name))
}
