package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progressInterval throttles the progress line.
const progressInterval = 250 * time.Millisecond

// progress counts the bytes read from an export and, when asked, redraws one status line
// on a terminal. It is used from one goroutine only.
type progress struct {
	w     io.Writer
	r     io.Reader
	total int64 // size of the export file; 0 when unknown (stdin, pipes)
	read  int64
	start time.Time
	last  time.Time
	shown bool
}

func newProgress(w io.Writer, r io.Reader) *progress {
	p := &progress{w: w, r: r, start: time.Now()}
	p.last = p.start
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			p.total = fi.Size()
		}
	}
	return p
}

// Read implements io.Reader, counting bytes.
func (p *progress) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.read += int64(n)
	return n, err
}

// update redraws the status line if progressInterval has passed since the last one.
func (p *progress) update(lines uint64) {
	now := time.Now()
	if now.Sub(p.last) < progressInterval {
		return
	}
	p.last = now
	rate := float64(lines) / now.Sub(p.start).Seconds()
	if p.total > 0 {
		fmt.Fprintf(p.w, "\rsealtrail: verify full: %d events, %.1f of %.1f MB (%d%%), %.0f events/s\033[K",
			lines, mb(p.read), mb(p.total), 100*p.read/p.total, rate)
	} else {
		fmt.Fprintf(p.w, "\rsealtrail: verify full: %d events, %.1f MB, %.0f events/s\033[K", lines, mb(p.read), rate)
	}
	p.shown = true
}

// clear erases the status line, if one was drawn.
func (p *progress) clear() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }
