package fs

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// exchange swaps the names a and b atomically (renameat2 RENAME_EXCHANGE). It fails
// with an error wrapping errNoExchange where the filesystem cannot, and with one
// wrapping fs.ErrNotExist if either name is missing.
func exchange(a, b string) error {
	err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return errNoExchange
	default:
		return &os.LinkError{Op: "exchange", Old: a, New: b, Err: err}
	}
}

// rewriteSpare writes data over the spare file p, in place, if p is a regular file
// with one link whose status has not changed for spareRest (so it left its object's
// name at least that long ago: a reader that opened it then has long finished), and
// reports whether it did. Any failure only means the spare is not used.
func rewriteSpare(p string, data []byte, now time.Time) bool {
	f, err := os.OpenFile(p, os.O_WRONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	ok := rewrite(f, data, now)
	if err := f.Close(); err != nil {
		return false
	}
	return ok
}

// rewrite is rewriteSpare on the open file f.
func rewrite(f *os.File, data []byte, now time.Time) bool {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return false
	}
	if now.Sub(time.Unix(st.Ctim.Unix())) < spareRest {
		return false
	}
	// Over the old bytes, then cut to length: the file keeps its blocks (notes of one
	// log differ in length by a few digits at most), where truncating first frees them
	// and the write allocates new ones, which costs about as much as a new file.
	if _, err := f.WriteAt(data, 0); err != nil {
		return false
	}
	return f.Truncate(int64(len(data))) == nil
}
