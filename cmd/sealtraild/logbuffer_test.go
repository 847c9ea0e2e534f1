package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the flush timer's goroutine, counting writes.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes
}

func TestLogBufferGathersInfoLines(t *testing.T) {
	out := &lockedBuffer{}
	lb := newLogBuffer(out)
	logger := newLogger(lb, "info")
	for i := range 100 {
		logger.Info("request", "n", i)
	}
	if got := out.String(); got != "" {
		t.Fatalf("INFO lines were written at once: %q", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for strings.Count(out.String(), "\n") < 100 {
		if time.Now().After(deadline) {
			t.Fatalf("after %s only %d of 100 lines were written", 10*time.Second, strings.Count(out.String(), "\n"))
		}
		time.Sleep(logFlushEvery / 5)
	}
	if n := out.count(); n != 1 {
		t.Errorf("100 lines took %d writes, want 1", n)
	}
	for i, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if !strings.Contains(line, fmt.Sprintf(`"n":%d}`, i)) {
			t.Fatalf("line %d is %q, want n=%d (in order)", i, line, i)
		}
	}
}

func TestLogBufferWritesWarningsAtOnce(t *testing.T) {
	out := &lockedBuffer{}
	lb := newLogBuffer(out)
	logger := newLogger(lb, "info")
	logger.Info("before")
	logger.Warn("trouble")
	got := out.String()
	if !strings.Contains(got, `"msg":"before"`) || !strings.Contains(got, `"msg":"trouble"`) ||
		strings.Index(got, "before") > strings.Index(got, "trouble") {
		t.Fatalf("after a WARN the output is %q, want the INFO line and then the WARN line", got)
	}
	logger.Error("failure")
	if !strings.Contains(out.String(), `"msg":"failure"`) {
		t.Fatalf("an ERROR line was held back: %q", out.String())
	}
}

func TestLogBufferCloseWritesTheRest(t *testing.T) {
	out := &lockedBuffer{}
	lb := newLogBuffer(out)
	logger := slog.New(slog.NewJSONHandler(lb, nil))
	logger.Info("stopped")
	if err := lb.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"msg":"stopped"`) {
		t.Fatalf("Close left the last line unwritten: %q", out.String())
	}
	logger.Info("after close")
	if !strings.Contains(out.String(), `"msg":"after close"`) {
		t.Fatalf("a line after Close was held back: %q", out.String())
	}
}

func TestLogBufferBoundsWhatItHolds(t *testing.T) {
	out := &lockedBuffer{}
	lb := newLogBuffer(out)
	line := []byte(`{"time":"x","level":"INFO","msg":"` + strings.Repeat("y", 1000) + "\"}\n")
	for range 2 * logFlushBytes / len(line) {
		if _, err := lb.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(out.String()); n < logFlushBytes {
		t.Fatalf("%d bytes written after %d gathered, want at least %d", n, 2*logFlushBytes, logFlushBytes)
	}
}

func TestLogBufferConcurrentLinesStayWhole(t *testing.T) {
	out := &lockedBuffer{}
	lb := newLogBuffer(out)
	logger := newLogger(lb, "info")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				if i%100 == 99 {
					logger.Warn("w", "g", g, "i", i)
				} else {
					logger.Info("request", "g", g, "i", i)
				}
			}
		})
	}
	wg.Wait()
	if err := lb.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 8*500 {
		t.Fatalf("%d lines, want %d", len(lines), 8*500)
	}
	last := map[string]int{}
	for _, l := range lines {
		var g, i int
		if _, err := fmt.Sscanf(l[strings.Index(l, `"g":`):], `"g":%d,"i":%d}`, &g, &i); err != nil {
			t.Fatalf("torn line %q: %v", l, err)
		}
		k := fmt.Sprint(g)
		if prev, ok := last[k]; ok && i != prev+1 {
			t.Fatalf("goroutine %d's line %d after its line %d: out of order", g, i, prev)
		}
		last[k] = i
	}
}
