package main

import (
	"bytes"
	"io"
	"sync"
	"time"
)

// The service's log (JSON lines on stderr, one per request) goes through a logBuffer:
// a write per line had been a system call, and on a pipe a wake-up of its reader, on
// every request (a few microseconds of the ingest path's CPU). Lines of level INFO and
// DEBUG gather and are written together, in order, at most logFlushEvery after the
// first of them, or at once when logFlushBytes have gathered; a WARN or ERROR line
// writes what has gathered and itself at once, so that what precedes a failure is out
// before it. Close (when serve returns, after the "stopped" line) writes the rest. A
// process killed without Close loses at most logFlushEvery of INFO lines.
const (
	logFlushEvery = 50 * time.Millisecond
	logFlushBytes = 64 << 10
)

// logBuffer gathers log lines for w; safe for concurrent use.
type logBuffer struct {
	w io.Writer

	wmu sync.Mutex // held while writing to w: writes go out one at a time, in order

	mu     sync.Mutex
	buf    []byte // lines not yet handed to w
	spare  []byte // the buffer of the last write, reused
	armed  bool   // the flush timer runs for what buf holds
	closed bool
	timer  *time.Timer
}

func newLogBuffer(w io.Writer) *logBuffer {
	b := &logBuffer{w: w}
	b.timer = time.AfterFunc(time.Hour, func() { _ = b.Flush() })
	b.timer.Stop()
	return b
}

// Write takes one log line (slog writes each record in one call).
func (b *logBuffer) Write(p []byte) (int, error) {
	urgent := !routine(p)
	b.mu.Lock()
	b.buf = append(b.buf, p...)
	full := len(b.buf) >= logFlushBytes
	if !urgent && !full && !b.closed {
		if !b.armed {
			b.armed = true
			b.timer.Reset(logFlushEvery)
		}
		b.mu.Unlock()
		return len(p), nil
	}
	b.mu.Unlock()
	if err := b.Flush(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// routine reports whether p is an INFO or DEBUG line of slog's JSON handler, whose
// level comes right after the time.
func routine(p []byte) bool {
	head := p[:min(len(p), 96)]
	return bytes.Contains(head, []byte(`"level":"INFO"`)) || bytes.Contains(head, []byte(`"level":"DEBUG"`))
}

// Flush writes what has gathered.
func (b *logBuffer) Flush() error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	b.mu.Lock()
	data := b.buf
	b.buf, b.spare = b.spare[:0], nil
	b.armed = false
	b.mu.Unlock()
	if len(data) == 0 {
		b.keep(data)
		return nil
	}
	_, err := b.w.Write(data)
	b.keep(data)
	return err
}

// keep makes data, once written, the next spare buffer, unless a burst made it large.
func (b *logBuffer) keep(data []byte) {
	if cap(data) > 4*logFlushBytes {
		return
	}
	b.mu.Lock()
	b.spare = data[:0]
	b.mu.Unlock()
}

// Close writes what has gathered; later lines are written as they come.
func (b *logBuffer) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.timer.Stop()
	return b.Flush()
}
