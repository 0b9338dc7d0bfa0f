package fsutil

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrLinkedDir is wrapped by the error of NoLinkedDirs.
var ErrLinkedDir = errors.New("a directory is a symbolic link")

// NoLinkedDirs makes sure that key material under root is read and
// written only through real directories: it returns an error naming the
// first of root/a, root/a/b, … root/a/b/c, for each dir "a/b/c" (relative
// to root), that is a symbolic link. A file written through a linked
// directory lands wherever the link leads, perhaps a directory others
// can write to, and is replaced or read there. root itself and its
// parents are the caller's choice and are not looked at; neither are the
// directories of a dir that does not exist yet (MkdirAll makes real
// ones). Pass filepath.Dir of a file to check the way to it.
func NoLinkedDirs(root string, dirs ...string) error {
	for _, dir := range dirs {
		if dir == "." {
			continue
		}
		if !filepath.IsLocal(dir) {
			return fmt.Errorf("%s is not inside %s", dir, root)
		}
		path := root
		for _, elem := range strings.Split(filepath.ToSlash(filepath.Clean(dir)), "/") {
			path = filepath.Join(path, elem)
			fi, err := os.Lstat(path)
			if errors.Is(err, fs.ErrNotExist) {
				break
			}
			if err != nil {
				return err
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				return LinkedDirError(root, path)
			}
		}
	}
	return nil
}

// LinkedDirError is the error of NoLinkedDirs for path, a symbolic link
// inside root, for a caller that finds the link itself (walking a tree).
func LinkedDirError(root, path string) error {
	target, err := os.Readlink(path)
	if err != nil {
		target = "?"
	}
	return &linkedDirError{root: root, path: path, target: target}
}

type linkedDirError struct{ root, path, target string }

func (e *linkedDirError) Error() string {
	return fmt.Sprintf("%s is a symbolic link (to %s); kubegate reads and writes key material only in directories inside %s, not through links: replace the link with a directory",
		e.path, e.target, e.root)
}

func (e *linkedDirError) Unwrap() error { return ErrLinkedDir }
