package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sealtrail/sealtrail/internal/loadtest"
)

// options of `sealtrail-load run`.
type options struct {
	sealtraild string
	pg         string // admin DSN of a PostgreSQL server; "" skips the PostgreSQL cases
	duration   time.Duration
	warmup     time.Duration
	projects   int
	batch      int
	size       int
	conc       []int
	only       *regexp.Regexp // runs only the cases whose "system, case" matches
	profile    string         // directory for a CPU profile of each Sealtrail case
	proofs     int            // leaves of the inclusion-proof cases (proofs.go); 0 skips them
	batchConc  int            // batches in flight in the batch cases
	proofConc  int            // concurrency of the inclusion-proof cases
	rounds     int            // times every case runs, interleaved (see runAll)
}

func runAll(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.sealtraild, "sealtraild", "bin/sealtraild", "the built service binary")
	fs.StringVar(&o.pg, "pg", "", "PostgreSQL admin DSN on 127.0.0.1 (a throwaway database is created per run); empty skips PostgreSQL")
	fs.DurationVar(&o.duration, "duration", 8*time.Second, "measured time per case")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured time before each case")
	fs.IntVar(&o.projects, "projects", 1000, "projects (one key each) of the many-tenant cases")
	fs.IntVar(&o.batch, "batch", 1000, "events per POST /log/batch")
	fs.IntVar(&o.size, "size", 1024, "bytes per event")
	conc := fs.String("c", "200,1000", "concurrencies of the single-event one-project cases")
	only := fs.String("only", "", "a regular expression: run only the cases whose \"system, case\" matches it")
	fs.StringVar(&o.profile, "profile", "", "a directory: write a CPU profile of sealtraild over each Sealtrail case's measured window into it")
	fs.IntVar(&o.batchConc, "batch-c", 4, "batches in flight in the batch cases")
	fs.IntVar(&o.proofs, "proofs", 0, "also measure GET /proof/inclusion on a log of this many leaves (filled first, not measured); 0 skips it")
	fs.IntVar(&o.proofConc, "proofs-c", 64, "concurrency of the inclusion-proof cases")
	fs.IntVar(&o.rounds, "rounds", 1, "rounds: every case runs this many times, interleaved with the others, and the ratios are their medians")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if err := o.check(*only, *conc); err != nil {
		return usageError{err}
	}
	return o.run()
}

// check validates the flags and fills in the options parsed from them.
func (o *options) check(only, conc string) error {
	if only != "" {
		var err error
		if o.only, err = regexp.Compile(only); err != nil {
			return fmt.Errorf("-only: %w", err)
		}
	}
	for _, s := range strings.Split(conc, ",") {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n < 1 {
			return fmt.Errorf("-c: %q is not a concurrency", s)
		}
		o.conc = append(o.conc, n)
	}
	if o.batchConc < 1 || o.batchConc > 256 {
		return fmt.Errorf("-batch-c: %d is not between 1 and 256", o.batchConc)
	}
	if o.rounds < 1 || o.rounds > 20 {
		return fmt.Errorf("-rounds: %d is not between 1 and 20", o.rounds)
	}
	if o.pg != "" {
		u, err := url.Parse(o.pg)
		if err != nil || (u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost") {
			return fmt.Errorf("-pg must be a postgres:// URL on 127.0.0.1")
		}
	}
	return nil
}

// run runs every case o selects and prints the table and its ratios.
func (o options) run() error {
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return err
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if o.sealtraild, err = filepath.Abs(o.sealtraild); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "sealtrail-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	t := &table{}
	t.header(o)
	ctx := context.Background()
	single := loadtest.Events(o.size) // built once, shared by every case
	// Every server runs for the whole run: the ceiling and Tessera on the same 1 KB
	// bodies, Sealtrail on the embedded default and on PostgreSQL.
	var servers []*server
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	for _, peer := range []struct {
		name string
		args []string
	}{{"trivial handler", []string{"trivial"}}, {"Tessera POSIX", []string{"tessera", filepath.Join(work, "tessera")}}} {
		p, err := start(self, peer.args, nil, work, addrFromListening)
		if err != nil {
			return fmt.Errorf("%s: %w", peer.name, err)
		}
		servers = append(servers, &server{name: peer.name, p: p, stop: p.stop, url: "http://" + p.addr + "/add"})
	}
	backends := []struct{ name, dsn string }{{"Sealtrail embedded", ""}}
	if o.pg != "" {
		backends = append(backends, struct{ name, dsn string }{"Sealtrail PostgreSQL", o.pg})
	}
	for _, b := range backends {
		s, err := startSealtrailServer(ctx, o, work, b.name, b.dsn)
		if err != nil {
			return fmt.Errorf("%s: %w", b.name, err)
		}
		servers = append(servers, s)
	}
	for round := 1; round <= o.rounds; round++ {
		for _, c := range casesOf(o, servers, single) {
			// Each case runs on every server in turn, in reverse order every other
			// round, so that a machine that slows down or speeds up over the run
			// does not favour the servers measured first.
			order := c.runs
			if round%2 == 0 {
				order = slices.Clone(order)
				slices.Reverse(order)
			}
			for _, r := range order {
				t.run(ctx, o, round, r.s.name, r.name, r.s.p, r.s.dsn, r.load)
			}
		}
	}
	if o.proofs > 0 {
		if err := proofCases(ctx, o, t, self, work); err != nil {
			return fmt.Errorf("inclusion proofs: %w", err)
		}
	}
	t.ratios(os.Stdout, o.rounds)
	return nil
}

// server is one server of the run.
type server struct {
	name string
	p    *proc
	stop func()
	dsn  string // Sealtrail on PostgreSQL: its database

	url       string   // single-event POSTs of the peers
	base      string   // Sealtrail: the service's base URL
	one, many []string // Sealtrail: the key of one project, and one key of each of many
}

// startSealtrailServer starts sealtraild on a fresh data dir (and database, if
// adminDSN is set) and creates the projects of its cases.
func startSealtrailServer(ctx context.Context, o options, work, name, adminDSN string) (*server, error) {
	data, err := os.MkdirTemp(work, "data-")
	if err != nil {
		return nil, err
	}
	s := &server{name: name}
	var extra []string
	drop := func() {}
	if adminDSN != "" {
		if s.dsn, drop, err = freshDatabase(ctx, adminDSN); err != nil {
			return nil, err
		}
		extra = append(extra, "SEALTRAIL_CATALOG="+s.dsn)
	}
	if s.p, err = startSealtrail(o, work, data, extra); err != nil {
		drop()
		return nil, err
	}
	s.stop = func() {
		s.p.stop()
		drop()
	}
	s.base = "http://" + s.p.addr
	if s.one, err = createKeys(s.base, s.p.token, 1); err == nil {
		s.many, err = createKeys(s.base, s.p.token, o.projects)
	}
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

// testCase is one case of a round and the load each server takes in it.
type testCase struct {
	name string
	runs []serverLoad
}

type serverLoad struct {
	s    *server
	name string // the case's name for this server (the peers have one stream)
	load loadtest.Load
}

// casesOf lists the cases of a round, in order: single events at each concurrency
// (every server), then on many projects, then batches on one and on many projects
// (Sealtrail only).
func casesOf(o options, servers []*server, single func(int) ([]byte, int)) []testCase {
	batch := loadtest.Batches(o.batch, o.size)
	var cases []testCase
	add := func(name string, load func(*server) (loadtest.Load, bool)) {
		c := testCase{name: name}
		for _, s := range servers {
			if l, ok := load(s); ok {
				n := name
				if s.base == "" {
					n = strings.Replace(name, "1 project", "1 stream", 1)
				}
				c.runs = append(c.runs, serverLoad{s, n, l})
			}
		}
		cases = append(cases, c)
	}
	for _, c := range o.conc {
		add(fmt.Sprintf("single, 1 project, c=%d", c), func(s *server) (loadtest.Load, bool) {
			if s.base == "" {
				return loadtest.Load{URL: s.url, Body: single, C: c, Count: 1 << 30}, true
			}
			return loadtest.Load{URL: s.base + "/api/v1/log", Tokens: s.one, Body: single, C: c, Count: 1 << 30}, true
		})
	}
	sealtrail := func(path string, keys func(*server) []string, body func(int) ([]byte, int), c int) func(*server) (loadtest.Load, bool) {
		return func(s *server) (loadtest.Load, bool) {
			if s.base == "" {
				return loadtest.Load{}, false
			}
			return loadtest.Load{URL: s.base + path, Tokens: keys(s), Body: body, C: c, Count: 1 << 30}, true
		}
	}
	one := func(s *server) []string { return s.one }
	many := func(s *server) []string { return s.many }
	cmax := o.conc[len(o.conc)-1]
	add(fmt.Sprintf("single, %d projects, c=%d", o.projects, cmax), sealtrail("/api/v1/log", many, single, cmax))
	add(fmt.Sprintf("batch of %d, 1 project, c=%d", o.batch, o.batchConc), sealtrail("/api/v1/log/batch", one, batch, o.batchConc))
	add(fmt.Sprintf("batch of %d, %d projects, c=%d", o.batch, o.projects, o.batchConc), sealtrail("/api/v1/log/batch", many, batch, o.batchConc))
	return cases
}

// startSealtrail starts sealtraild on data, with no rate limit, o's batch size, its
// profiling endpoint when o asks for profiles, and extra environment; the returned
// proc holds the operator token.
func startSealtrail(o options, work, data string, extra []string) (*proc, error) {
	env := append([]string{"SEALTRAIL_RATE_LIMIT=1000000000", "SEALTRAIL_MAX_BATCH_EVENTS=" + fmt.Sprint(o.batch)}, extra...)
	if o.profile != "" {
		env = append(env, "SEALTRAIL_OPS_PPROF=true")
	}
	p, err := start(o.sealtraild, []string{"serve", "--listen", "127.0.0.1:0", "--data", data}, env, work, addrFromServing)
	if err != nil {
		return nil, err
	}
	tok, err := os.ReadFile(filepath.Join(data, "operator.token"))
	if err != nil {
		p.stop()
		return nil, err
	}
	p.token = strings.TrimSpace(string(tok))
	return p, nil
}

// proc is a process this run started.
type proc struct {
	cmd    *exec.Cmd
	addr   string
	token  string // the operator token, for /debug/pprof
	exited chan struct{}
}

// start runs bin with args and waits (at most 60 s) until addrOf finds its listen
// address in a line of its output.
func start(bin string, args, env []string, dir string, addrOf func(string) string) (*proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout // one pipe; the service logs JSON lines on stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 1<<20)
		found := false
		for sc.Scan() { // drain the output for the process's lifetime
			if a := addrOf(sc.Text()); a != "" && !found {
				found = true
				addr <- a
			}
		}
		_ = cmd.Wait()
		close(p.exited)
	}()
	select {
	case p.addr = <-addr:
		if err := loadtest.Loopback("http://" + p.addr); err != nil {
			p.stop()
			return nil, err
		}
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("%s exited before listening", bin)
	case <-time.After(60 * time.Second):
		p.stop()
		return nil, fmt.Errorf("%s did not listen within 60 s", bin)
	}
}

// stop sends SIGTERM to the process's PID, and SIGKILL after 30 s.
func (p *proc) stop() {
	_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.exited
	}
}

func addrFromListening(line string) string {
	a, _ := strings.CutPrefix(line, "listening ")
	if a == line {
		return ""
	}
	return a
}

func addrFromServing(line string) string {
	var rec struct{ Msg, Addr string }
	if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "sealtraild serving" {
		return strings.TrimPrefix(rec.Addr, "http://")
	}
	return ""
}

// createKeys creates n projects with one log:write key each through the operator API
// and returns the keys.
func createKeys(base, token string, n int) ([]string, error) {
	keys := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			var p struct{ ID string }
			if errs[i] = admin(base, token, "/admin/v1/projects", map[string]string{"name": fmt.Sprintf("load-%d", i)}, &p); errs[i] != nil {
				return
			}
			var k struct{ Secret string }
			errs[i] = admin(base, token, "/admin/v1/projects/"+p.ID+"/keys", map[string]any{"scopes": []string{"log:write"}}, &k)
			keys[i] = k.Secret
		})
	}
	wg.Wait()
	return keys, errors.Join(errs...)
}

func admin(base, token, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("X-Sealtrail-Actor", "loadtest")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, raw)
	}
	return json.Unmarshal(raw, out)
}

// freshDatabase creates a throwaway database on the admin DSN's server and returns its
// DSN and a func that drops it.
func freshDatabase(ctx context.Context, adminDSN string) (string, func(), error) {
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	name := "sealtrail_load_" + hex.EncodeToString(rnd[:])
	exec := func(sql string) error {
		conn, err := pgx.Connect(ctx, adminDSN)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, sql)
		return err
	}
	if err := exec("CREATE DATABASE " + name); err != nil {
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	u, _ := url.Parse(adminDSN)
	u.Path = "/" + name
	return u.String(), func() { _ = exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") }, nil
}
