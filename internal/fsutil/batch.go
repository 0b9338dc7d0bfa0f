package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// File is one file of a batch written by WriteFiles.
type File struct {
	Path      string
	Data      []byte
	Mode      fs.FileMode
	Overwrite bool // replace an existing file; otherwise it is an error
}

// WriteFiles writes every file with the same guarantees as WriteFile —
// each file appears whole or not at all, with its mode, and is durable
// when WriteFiles returns — at the cost of one flush of the file system
// and one fsync per directory instead of two fsyncs per file.
//
// Existence is checked for every file before anything is written, so a
// refused batch writes nothing. If writing fails midway, the files
// already renamed into place stay (each is complete) and the temporary
// files are removed.
func WriteFiles(files []File) error {
	for _, f := range files {
		if f.Overwrite {
			continue
		}
		if _, err := os.Lstat(f.Path); err == nil {
			return fmt.Errorf("write %s: %w (use --force to replace it)", f.Path, ErrExists)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
	}
	temps := make([]string, 0, len(files))
	defer func() {
		for _, t := range temps {
			if t != "" {
				os.Remove(t)
			}
		}
	}()
	dirs := map[string]bool{}
	mask := umask()
	var last *os.File
	for _, f := range files {
		dir := filepath.Dir(f.Path)
		if !dirs[dir] {
			if err := os.MkdirAll(dir, ModeDir); err != nil {
				return fmt.Errorf("write %s: %w", f.Path, err)
			}
			dirs[dir] = true
		}
		tmp, err := createTemp(f.Path, f.Mode, mask)
		if err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		temps = append(temps, tmp.Name())
		if _, err := tmp.Write(f.Data); err != nil {
			tmp.Close()
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		if last != nil {
			last.Close()
		}
		last = tmp
	}
	if last != nil {
		// One flush makes every file's data durable before any rename.
		err := syncAll(last, temps)
		last.Close()
		if err != nil {
			return fmt.Errorf("write %s: %w", files[0].Path, err)
		}
	}
	for i, f := range files {
		if err := os.Rename(temps[i], f.Path); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		temps[i] = ""
	}
	for dir := range dirs {
		if err := SyncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// createTemp creates a new file .BASE.tmp-RANDOM next to path with mode
// perm. The mode is given at creation, so a key is never readable by
// others even for a moment, and it saves a chmod per file; only when
// mask (the umask) takes away bits of perm are they set explicitly.
func createTemp(path string, perm, mask fs.FileMode) (*os.File, error) {
	dir, base := filepath.Split(path)
	prefix := dir + "." + base + ".tmp-"
	for try := 0; ; try++ {
		f, err := os.OpenFile(prefix+strconv.FormatUint(uint64(rand.Uint32()), 10), os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) && try < 10000 {
			continue
		}
		if err != nil {
			return nil, err
		}
		if perm&mask != 0 {
			if err := f.Chmod(perm); err != nil {
				f.Close()
				os.Remove(f.Name())
				return nil, err
			}
		}
		return f, nil
	}
}

// fsyncEach fsyncs every named file; it is the portable fallback of
// syncAll.
func fsyncEach(names []string) error {
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
