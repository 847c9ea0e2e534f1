//go:build !linux

package fs

import (
	"errors"
	"os"
	"time"
)

const haveSyncFS = false

func syncFS(*os.File) error { return errors.New("syncfs is not available on this platform") }

func moveNoReplace(tmp, p string) error { return linkOnce(tmp, p) }

// fdatasync is fsync where the platform has no fdatasync.
func fdatasync(f *os.File) error { return f.Sync() }

func exchange(string, string) error { return errNoExchange }

func rewriteSpare(string, []byte, time.Time) bool { return false }
