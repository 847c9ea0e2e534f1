package fs

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

const haveSyncFS = true

// syncFS flushes the whole filesystem holding f (syncfs(2)); since Linux 5.8 it
// reports write-back errors.
func syncFS(f *os.File) error { return unix.Syncfs(int(f.Fd())) }

// moveNoReplace renames tmp to p unless p exists (an error wrapping fs.ErrExist). A
// rename keeps the inode: the link-then-unlink alternative frees one inode per object,
// and ext4's inode allocator then spends its time skipping recently deleted inodes
// (it was most of the CPU a publication cost). Filesystems without RENAME_NOREPLACE
// fall back to linkOnce.
func moveNoReplace(tmp, p string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, p, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return linkOnce(tmp, p)
	default:
		return &os.LinkError{Op: "rename", Old: tmp, New: p, Err: err}
	}
}

// fdatasync makes f's data and the metadata needed to read it (its size) durable,
// without the rest of its metadata (times).
func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
