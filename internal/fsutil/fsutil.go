// Package fsutil writes files the way kubegate promises on disk: atomically
// (temp file, fsync, rename, fsync of the directory), with explicit
// permissions, and never over existing material unless asked to.
package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrExists is returned by WriteFile when the target exists and overwrite
// was not requested.
var ErrExists = errors.New("already exists")

// Private and public file and directory modes used across kubegate.
const (
	ModeKey    fs.FileMode = 0o600 // private keys, tokens, kubeconfigs with credentials
	ModePublic fs.FileMode = 0o644 // certificates and public keys
	ModeDir    fs.FileMode = 0o700 // every directory kubegate creates
)

// WriteFile writes data to path atomically with mode perm. Parent
// directories are created with ModeDir. When overwrite is false and path
// exists, it returns an error wrapping ErrExists and writes nothing.
func WriteFile(path string, data []byte, perm fs.FileMode, overwrite bool) error {
	if !overwrite {
		if _, err := os.Lstat(path); err == nil {
			return fmt.Errorf("write %s: %w (use --force to replace it)", path, ErrExists)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, ModeDir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := createTemp(path, perm, umask())
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // no-op after a successful rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return SyncDir(dir)
}

// SyncDir fsyncs a directory so that a rename inside it is durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// CheckWritableDir reports, in one error naming dir, whether kubegate can
// create files in dir (creating it with ModeDir if it is missing). It is
// meant to run before any file is written, so bad input changes nothing.
func CheckWritableDir(dir string) error {
	if err := os.MkdirAll(dir, ModeDir); err != nil {
		return fmt.Errorf("directory %s is not writable: %w", dir, errors.Unwrap(err))
	}
	f, err := os.CreateTemp(dir, ".kubegate-probe-*")
	if err != nil {
		return fmt.Errorf("directory %s is not writable: %w", dir, errors.Unwrap(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// CreateFile writes data to a new file at path with mode perm and makes
// it durable, as WriteFile does, but in place: the file is created
// exclusively, so when anything exists at path (a file, a link, another
// run's file) it returns an error wrapping fs.ErrExist and leaves that
// alone. Parent directories are created with ModeDir. On any other
// failure the new file is removed.
func CreateFile(path string, data []byte, perm fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, ModeDir); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			os.Remove(path)
		}
	}()
	if perm&umask() != 0 {
		if err := f.Chmod(perm); err != nil {
			f.Close()
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return SyncDir(dir)
}
