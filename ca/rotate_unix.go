//go:build unix

package ca

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// LockRotation takes the exclusive lock of DIR/pki/rotation.lock, which a
// rotation phase holds from its plan to its last write, so that two runs
// cannot interleave their writes. It fails at once, naming the file,
// when another process holds it. The lock goes with the process; the
// file stays. With no DIR/pki there is nothing to lock, and nothing to
// rotate: unlock is then a no-op.
func LockRotation(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, filepath.FromSlash(RotationLockFile))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fsutil.ModeKey)
	if errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is locked: another kubegate ca rotate is running on %s; run again once it is done", path, dir)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// fileOwner returns the owner of the file fi describes.
func fileOwner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}
