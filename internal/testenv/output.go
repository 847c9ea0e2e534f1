package testenv

import (
	"bytes"
	"sync"
)

// Output collects a child process's stdout or stderr while the test reads it: set it
// as cmd.Stdout and call String at any time.
type Output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

// String returns what has been written so far.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}
