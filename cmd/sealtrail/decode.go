package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/sealtrail/sealtrail/tlog"
)

// Every line is parsed (tlog.DecodeCanonicalExportLine: canonicalize, compare, decode) and checked
// (tlog.Rebuilder.Precheck: commitment, signature, leaf hash) on worker goroutines, one
// per core; only what depends on the order (sequence contiguity, the compact range of
// the tree, the first break) runs on the caller's goroutine, which receives the batches
// in line order. Memory stays flat: at most 2*GOMAXPROCS+2 batches exist at once
// (queued, being filled, being checked), each at most batchLines lines or batchBytes
// plus one line.

const (
	batchLines = 64      // lines per batch
	batchBytes = 1 << 20 // a batch closes once its lines hold this many bytes
)

// lineBatch is a run of consecutive export lines and, once done is closed, their
// decoded records.
type lineBatch struct {
	first  uint64 // line number (1-based) of the batch's first line
	data   []byte // the lines, back to back
	ends   []int  // end offset in data of each line
	recs   []tlog.Record
	checks []tlog.Check // Precheck of each decoded record
	errs   []error      // decoding error of each line, or nil
	// err ends the stream after the batch's lines: a read error, or a line too long.
	err  error
	done chan struct{}
}

func (b *lineBatch) decode(check func(*tlog.Record) tlog.Check) {
	b.recs = make([]tlog.Record, len(b.ends))
	b.checks = make([]tlog.Check, len(b.ends))
	b.errs = make([]error, len(b.ends))
	start := 0
	for i, end := range b.ends {
		b.recs[i], b.errs[i] = tlog.DecodeCanonicalExportLine(b.data[start:end])
		if b.errs[i] == nil {
			b.checks[i] = check(&b.recs[i])
		}
		start = end
	}
}

// decodeLines parses r's lines and runs check on each record on worker goroutines, and
// returns the batches in line order. The caller receives each batch, waits for its done
// channel, and closes quit when it stops early; the goroutines then exit as soon as they
// are not blocked reading r (a reader that never returns keeps one goroutine, as it
// would keep the caller).
func decodeLines(r io.Reader, quit <-chan struct{}, check func(*tlog.Record) tlog.Check) <-chan *lineBatch {
	workers := max(1, runtime.GOMAXPROCS(0))
	ordered := make(chan *lineBatch, 2*workers)
	work := make(chan *lineBatch, workers)
	for range workers {
		go func() {
			for b := range work {
				b.decode(check)
				close(b.done)
			}
		}()
	}
	go func() {
		defer close(work)
		defer close(ordered)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), maxLineSize)
		next := uint64(1)
		// Each batch's buffers start at the size the previous one reached: grown by
		// doubling from nothing, they cost the reader more than the lines' copying
		// (about a quarter of the whole verification's CPU, all of it on this one
		// goroutine).
		newBatch := func(prev *lineBatch) *lineBatch {
			b := &lineBatch{first: next, done: make(chan struct{}), ends: make([]int, 0, batchLines)}
			if prev != nil {
				b.data = make([]byte, 0, cap(prev.data))
			}
			return b
		}
		b := newBatch(nil)
		// send hands b to the caller (in order) and to a worker; false means quit.
		send := func(b *lineBatch) bool {
			select {
			case ordered <- b:
			case <-quit:
				return false
			}
			if len(b.ends) == 0 {
				close(b.done)
				return true
			}
			select {
			case work <- b:
				return true
			case <-quit:
				return false
			}
		}
		for sc.Scan() {
			b.data = append(b.data, sc.Bytes()...)
			b.ends = append(b.ends, len(b.data))
			next++
			if len(b.ends) == batchLines || len(b.data) >= batchBytes {
				if !send(b) {
					return
				}
				b = newBatch(b)
			}
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				b.err = fmt.Errorf("line %d: longer than %d bytes", next, maxLineSize)
			} else {
				b.err = fmt.Errorf("read export after line %d: %w", next-1, err)
			}
		}
		if len(b.ends) > 0 || b.err != nil {
			send(b)
		}
	}()
	return ordered
}
