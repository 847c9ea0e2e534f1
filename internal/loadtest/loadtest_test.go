package loadtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunCountsAcknowledgements: a run against a server that refuses every third
// request counts acknowledged requests and events, errors, and stops at Count.
func TestRunCountsAcknowledgements(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if json.NewDecoder(r.Body).Decode(&body) != nil || r.Header.Get("Authorization") == "" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if n.Add(1)%3 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	res, err := Load{URL: srv.URL, Tokens: []string{"a", "b"}, C: 4, Count: 300, Duration: time.Minute,
		Body: func(i int) ([]byte, int) { return Batch(i, 2, 100), 2 }}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 200 || res.Events != 400 || res.Errors != 100 || res.FirstError != "status 503" {
		t.Fatalf("result %+v, want 200 acknowledged, 400 events, 100 errors", res)
	}
	if res.P50 <= 0 || res.P99 < res.P50 {
		t.Fatalf("latencies p50 %s p99 %s", res.P50, res.P99)
	}
}

// TestRunGet: with Get set, every request is a GET of URL+Get(i), one event each.
func TestRunGet(t *testing.T) {
	var bad atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Query().Get("leafIndex") == "" || r.ContentLength > 0 {
			bad.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	res, err := Load{URL: srv.URL + "/proof", C: 2, Count: 50, Duration: time.Minute,
		Get: func(i int) string { return "?leafIndex=" + strconv.Itoa(i) }}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 50 || res.Events != 50 || res.Errors != 0 || bad.Load() != 0 {
		t.Fatalf("result %+v (%d bad requests), want 50 acknowledged GETs", res, bad.Load())
	}
}

func TestLoopbackOnly(t *testing.T) {
	for _, u := range []string{"http://10.0.0.1/x", "http://example.com/", "::"} {
		if Loopback(u) == nil {
			t.Errorf("%s accepted", u)
		}
		if _, err := (Load{URL: u, C: 1, Count: 1, Duration: time.Second}).Run(context.Background()); err == nil {
			t.Errorf("Run against %s did not refuse", u)
		}
	}
	if err := Loopback("http://127.0.0.1:8080/api/v1/log"); err != nil {
		t.Error(err)
	}
}

func TestEventSize(t *testing.T) {
	for _, size := range []int{200, 1024, 4096} {
		e := Event(7, size)
		var v map[string]any
		if len(e) != size || json.Unmarshal(e, &v) != nil {
			t.Errorf("Event(%d): %d bytes, valid JSON %v", size, len(e), json.Unmarshal(e, &v) == nil)
		}
	}
}

// TestReadUsage: the process's own CPU time, read from /proc, grows while it works.
func TestReadUsage(t *testing.T) {
	u0, err := ReadUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	workUntil(t, "no CPU time counted", func() (bool, error) {
		u1, err := ReadUsage(os.Getpid())
		d := u1.Sub(u0)
		return d.CPUMicros > 0 && d.WriteBytes >= 0, err
	})
}

// workUntil spins the CPU in steps until done reports true, and fails the test with
// msg if it never does; done's error fails it at once.
func workUntil(t *testing.T, msg string, done func() (bool, error)) {
	t.Helper()
	x := 0
	for range 1000 {
		for range 1_000_000 {
			x++
		}
		ok, err := done()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
	}
	t.Fatalf("%s after %d iterations", msg, x)
}

// TestMachineCPU: the /proc/stat parse counts all but idle and iowait as busy, refuses
// lines it cannot read, and the live file rises with this process's work.
func TestMachineCPU(t *testing.T) {
	m, err := parseMachineCPU([]byte("cpu  10 1 5 100 7 2 3 4 9 0\ncpu0 5 0 2 50 3 1 1 2 4 0\n"))
	if err != nil || m != (MachineCPU{Busy: 10 + 1 + 5 + 2 + 3 + 4, Total: 10 + 1 + 5 + 100 + 7 + 2 + 3 + 4}) {
		t.Fatalf("parse = %+v, %v", m, err)
	}
	for _, bad := range []string{"", "cpu 1 2 3", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3 x 5 6 7 8", "cpu 1 2 3 -4 5 6 7 8"} {
		if m, err := parseMachineCPU([]byte(bad)); err == nil {
			t.Errorf("parse(%q) = %+v, want an error", bad, m)
		}
	}
	m0, err := ReadMachineCPU()
	if err != nil {
		t.Fatal(err)
	}
	workUntil(t, "no machine CPU time counted", func() (bool, error) {
		m1, err := ReadMachineCPU()
		d := m1.Sub(m0)
		return d.Busy > 0 && d.Total >= d.Busy, err
	})
}

// TestRunDrains: requests still in flight when the run's time is up are awaited and
// counted as drained (or unfinished past Drain), not in the rates.
func TestRunDrains(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer slow" {
			<-release
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	defer close(release)
	body := func(i int) ([]byte, int) { return Event(i, 100), 1 }
	go func() { time.Sleep(300 * time.Millisecond); release <- struct{}{}; release <- struct{}{} }()
	res, err := Load{URL: srv.URL, Tokens: []string{"slow"}, C: 2, Count: 2, Duration: 50 * time.Millisecond, Body: body}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 0 || res.Drained != 2 || res.DrainedEvents != 2 || res.Unfinished != 0 || res.P50 <= 0 {
		t.Fatalf("result %+v, want 2 drained", res)
	}
	res, err = Load{URL: srv.URL, Tokens: []string{"slow"}, C: 1, Count: 1, Duration: 10 * time.Millisecond,
		Drain: 10 * time.Millisecond, Body: body}.Run(context.Background())
	if err != nil || res.Unfinished != 1 || res.Drained != 0 {
		t.Fatalf("result %+v, %v: want 1 unfinished", res, err)
	}
}
