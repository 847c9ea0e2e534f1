// Package loadtest drives a closed-loop HTTP load against an ingest endpoint and
// measures what it cost the server: requests and events per second, latency
// percentiles, server CPU per request (from /proc/<pid>/stat) and bytes written per
// event (from /proc/<pid>/io, plus PostgreSQL's WAL when given). It is used by
// cmd/sealtrail-load (make loadtest); it talks to 127.0.0.1 only.
package loadtest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Load is one closed-loop run: C workers each send a request, wait for its answer and
// send the next, until Count requests were sent or Duration passed. Requests in flight
// at the end are then awaited (at most Drain): they count in the latencies and the
// drained total, not in the rates, and the server is idle again for the next run.
type Load struct {
	URL    string   // the endpoint (loopback only)
	Tokens []string // bearer tokens, used round-robin per request; none sends no header
	// Body returns the body of request i and how many events it carries.
	Body func(i int) ([]byte, int)
	// Get, when set, makes request i a GET of URL+Get(i) (a query, say) instead of a
	// POST of a Body; it counts as one event.
	Get      func(i int) string
	C        int
	Count    int
	Duration time.Duration
	Drain    time.Duration // default 30 s
	// OK reports whether a status is an acknowledgement (default: 2xx).
	OK func(status int) bool
}

// Result is what a run measured on the client side.
type Result struct {
	// Requests and Events were acknowledged within Elapsed (the run's Duration).
	Requests, Events int
	// Drained requests (DrainedEvents events) were acknowledged after it; Unfinished
	// ones were still unanswered at the end of the drain.
	Drained, DrainedEvents, Unfinished int
	Errors                             int
	Elapsed                            time.Duration
	// P50 and P99 are over every acknowledged request, drained ones included.
	P50, P99   time.Duration
	FirstError string
}

// ReqPerSec and EventsPerSec are the acknowledged rates.
func (r Result) ReqPerSec() float64    { return float64(r.Requests) / r.Elapsed.Seconds() }
func (r Result) EventsPerSec() float64 { return float64(r.Events) / r.Elapsed.Seconds() }

// Loopback refuses any URL whose host is not a loopback address.
func Loopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("loadtest: %w", err)
	}
	if h := u.Hostname(); h != "127.0.0.1" && h != "::1" && h != "localhost" {
		return fmt.Errorf("loadtest: %s is not a loopback address", h)
	}
	return nil
}

// Run performs the load.
func (l Load) Run(ctx context.Context) (Result, error) {
	if err := Loopback(l.URL); err != nil {
		return Result{}, err
	}
	target, err := url.Parse(l.URL)
	if err != nil || target.Scheme != "http" || target.Host == "" {
		return Result{}, fmt.Errorf("loadtest: %q is not an http:// URL", l.URL)
	}
	if l.OK == nil {
		l.OK = func(s int) bool { return s >= 200 && s < 300 }
	}
	if l.Drain <= 0 {
		l.Drain = 30 * time.Second
	}
	window, cancel := context.WithTimeout(ctx, l.Duration)
	defer cancel()
	reqCtx, cancelReqs := context.WithTimeout(ctx, l.Duration+l.Drain)
	defer cancelReqs()

	var next atomic.Int64
	lat := make([][]time.Duration, l.C)
	var events, drained, drainedEvents, unfinished, errs atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	end := start.Add(l.Duration)
	var wg sync.WaitGroup
	for w := range l.C {
		wg.Go(func() {
			c := newConn(target)
			defer c.close()
			for window.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= l.Count {
					return
				}
				body, n := []byte(nil), 1
				if l.Get == nil {
					body, n = l.Body(i)
				}
				t0 := time.Now()
				status, err := l.send(reqCtx, c, i, body)
				d := time.Since(t0)
				switch {
				case reqCtx.Err() != nil:
					unfinished.Add(1)
				case err == nil && l.OK(status):
					lat[w] = append(lat[w], d)
					if t0.Add(d).After(end) {
						drained.Add(1)
						drainedEvents.Add(int64(n))
					} else {
						events.Add(int64(n))
					}
				default:
					errs.Add(1)
					if err == nil {
						err = fmt.Errorf("status %d", status)
					}
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	wg.Wait()
	res := Result{Elapsed: min(time.Since(start), l.Duration), Events: int(events.Load()), Errors: int(errs.Load()),
		Drained: int(drained.Load()), DrainedEvents: int(drainedEvents.Load()), Unfinished: int(unfinished.Load())}
	if s, ok := firstErr.Load().(string); ok {
		res.FirstError = s
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	res.Requests = len(all) - res.Drained
	if len(all) > 0 {
		res.P50, res.P99 = all[len(all)*50/100], all[min(len(all)-1, len(all)*99/100)]
	}
	return res, nil
}

// send sends request i on c.
func (l Load) send(ctx context.Context, c *conn, i int, body []byte) (int, error) {
	method, query := http.MethodPost, ""
	if l.Get != nil {
		method, query, body = http.MethodGet, l.Get(i), nil
	}
	token := ""
	if len(l.Tokens) > 0 {
		token = l.Tokens[i%len(l.Tokens)]
	}
	return c.do(ctx, method, query, body, token)
}

// Event returns a valid ingest body of about size bytes (a metadata pad fills it), in
// the RFC 8785 form the Go client sends (client.Client.Log): members sorted, no
// whitespace.
func Event(i, size int) []byte {
	head := fmt.Sprintf(`{"action":"load.event","actor":{"id":"u%d","type":"user"},"metadata":{"pad":"`, i%actors)
	tail := `"}}`
	pad := max(0, size-len(head)-len(tail))
	return []byte(head + strings.Repeat("x", pad) + tail)
}

// actors is how many distinct actors the events name, in turn.
const actors = 1000

// Batch returns a /log/batch body of n events of about size bytes each, as the Go
// client's LogBatch sends it.
func Batch(i, n, size int) []byte {
	var b bytes.Buffer
	b.Grow(len(`{"events":[]}`) + n*(size+1))
	b.WriteString(`{"events":[`)
	for j := range n {
		if j > 0 {
			b.WriteByte(',')
		}
		b.Write(Event(i*n+j, size))
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// maxBodies bounds the memory the pre-built bodies of Events and Batches hold.
const maxBodies = 64 << 20

// Events returns a Load.Body of single events of about size bytes: request i sends
// Event(i, size), built once before the run, so the generator's CPU goes to sending
// (the service does not deduplicate unsigned events, and Event repeats every
// thousand requests anyway).
func Events(size int) func(int) ([]byte, int) {
	return cycle(actors, size, func(i int) []byte { return Event(i, size) }, 1)
}

// Batches returns a Load.Body of batches of n events of about size bytes: request i
// sends Batch(i, n, size), built once before the run (at most 64 MB of them; beyond
// that the bodies repeat sooner than Batch's would).
func Batches(n, size int) func(int) ([]byte, int) {
	return cycle(actors/gcd(n, actors), n*size, func(i int) []byte { return Batch(i, n, size) }, n)
}

// cycle pre-builds the k distinct bodies (of about size bytes each) of a Body that
// repeats every k requests, or as many as fit in maxBodies.
func cycle(k, size int, body func(int) []byte, events int) func(int) ([]byte, int) {
	k = max(1, min(k, maxBodies/max(1, size)))
	bodies := make([][]byte, k)
	for i := range bodies {
		bodies[i] = body(i)
	}
	return func(i int) ([]byte, int) { return bodies[i%k], events }
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
