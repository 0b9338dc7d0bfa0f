package ca

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// LockRotation creates DIR/pki/rotation.lock, holding the process ID, for
// a rotation phase to hold from its plan to its last write, so that two
// runs cannot interleave their writes; unlock removes it. It fails at
// once, naming the file, when the file exists. A run that was killed
// leaves the file behind, to be removed by hand. With no DIR/pki there
// is nothing to lock, and nothing to rotate: unlock is then a no-op. A
// DIR/pki that is a symbolic link is refused (fsutil.NoLinkedDirs).
func LockRotation(dir string) (unlock func(), err error) {
	if err := fsutil.NoLinkedDirs(dir, PKIDir); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, filepath.FromSlash(RotationLockFile))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, fsutil.ModeKey)
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("%s exists: another kubegate ca rotate is running on %s, or one was stopped; remove the file once none runs", path, dir)
	case errors.Is(err, fs.ErrNotExist):
		return func() {}, nil
	case err != nil:
		return nil, err
	}
	_, err = f.WriteString(strconv.Itoa(os.Getpid()) + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	return func() { os.Remove(path) }, nil
}
