package sequencer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// childProc is a running sequencer child (see childMain) and what it has printed.
type childProc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr bytes.Buffer // read only after exited is closed
	ready  chan struct{}
	exited chan struct{} // stdout drained and the process reaped
	slots  chan struct{} // bounds the events sent but not yet answered
	err    error         // the process's exit status, set before exited closes

	mu      sync.Mutex
	pending map[uint64]bool // tags sent, not yet answered
	acks    []ack
	errs    []string
	done    bool
}

// startChild starts the test binary as a sequencer child with cfg, allowing inflight
// events sent but unanswered at a time.
func startChild(t *testing.T, cfg stackConfig, name string, inflight int) *childProc {
	t.Helper()
	js, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &childProc{t: t, name: name, ready: make(chan struct{}), exited: make(chan struct{}),
		slots: make(chan struct{}, inflight), pending: map[uint64]bool{}}
	c.cmd = exec.Command(os.Args[0], "-test.run=^$")
	c.cmd.Env = append(os.Environ(), childEnv+"="+string(js))
	c.cmd.Stderr = &c.stderr
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Never leave a child behind, whatever happens to the test.
	t.Cleanup(func() {
		_ = c.cmd.Process.Kill()
		<-c.exited
	})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.line(sc.Text())
		}
		_, _ = io.Copy(io.Discard, out)
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	return c
}

func (c *childProc) line(l string) {
	switch {
	case l == "ready":
		close(c.ready)
	case l == "done":
		c.mu.Lock()
		c.done = true
		c.mu.Unlock()
	case strings.HasPrefix(l, "ack "):
		a, err := parseAck(l)
		c.mu.Lock()
		if err != nil {
			c.errs = append(c.errs, err.Error())
		} else {
			c.acks = append(c.acks, a)
			delete(c.pending, a.tag)
		}
		c.mu.Unlock()
		<-c.slots
	case strings.HasPrefix(l, "err "):
		c.mu.Lock()
		c.errs = append(c.errs, l)
		c.mu.Unlock()
		<-c.slots
	default:
		c.mu.Lock()
		c.errs = append(c.errs, "unexpected output: "+l)
		c.mu.Unlock()
	}
}

// waitReady waits for the child's "ready" line.
func (c *childProc) waitReady() {
	c.t.Helper()
	select {
	case <-c.ready:
	case <-c.exited:
		c.t.Fatalf("child %s exited before ready: %v\n%s", c.name, c.err, c.stderr.String())
	case <-time.After(2 * time.Minute):
		c.t.Fatalf("child %s not ready after 2 minutes", c.name)
	}
}

// feed sends the tags first, then next() until it reports false, and closes stdin
// if closeAtEnd; it stops early when the child dies or stop closes. It returns at
// once; the returned channel closes when feeding ends.
func (c *childProc) feed(first []uint64, next func() (uint64, bool), closeAtEnd bool, stop <-chan struct{}) <-chan struct{} {
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		w := bufio.NewWriter(c.stdin)
		for i := 0; ; i++ {
			var tag uint64
			if i < len(first) {
				tag = first[i]
			} else {
				var ok bool
				if tag, ok = next(); !ok {
					break
				}
			}
			select {
			case c.slots <- struct{}{}:
			case <-c.exited:
				return
			case <-stop:
				return
			}
			c.mu.Lock()
			c.pending[tag] = true
			c.mu.Unlock()
			w.WriteString(strconvU(tag) + "\n")
			// Flush when nothing else is ready to send soon: keeps lines flowing
			// without a write per event.
			if len(c.slots) == cap(c.slots) || i%16 == 15 || i+1 == len(first) {
				if err := w.Flush(); err != nil {
					return
				}
			}
		}
		if err := w.Flush(); err == nil && closeAtEnd {
			_ = c.stdin.Close()
		}
	}()
	return fed
}

// kill SIGKILLs the child and waits until it is reaped. It fails the test if the
// child had exited by itself (an error at start-up or in Recover).
func (c *childProc) kill() {
	c.t.Helper()
	_ = c.cmd.Process.Kill()
	c.wait()
	var ee *exec.ExitError
	if !errors.As(c.err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		c.t.Fatalf("child %s exited by itself before the kill: %v\n%s", c.name, c.err, c.stderr.String())
	}
}

// wait waits for the child to exit.
func (c *childProc) wait() {
	c.t.Helper()
	select {
	case <-c.exited:
	case <-time.After(5 * time.Minute):
		c.t.Fatalf("child %s did not exit", c.name)
	}
}

// results returns what the child acknowledged, its error lines, and the tags it was
// sent but never answered. Call after the child exited.
func (c *childProc) results() (acks []ack, errs []string, unanswered []uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for tag := range c.pending {
		unanswered = append(unanswered, tag)
	}
	return c.acks, c.errs, unanswered
}

func strconvU(v uint64) string { return strconv.FormatUint(v, 10) }
