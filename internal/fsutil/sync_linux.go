package fsutil

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// syncAll makes the named files durable. On Linux one syncfs(2) on the
// file system that holds them does it in a single journal commit; files
// on other file systems (a batch spanning mounts) are fsynced one by one.
// Each file is a temporary file in its target's directory, so checking
// the directories is enough.
func syncAll(f *os.File, names []string) error {
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fsyncEach(names)
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return fsyncEach(names)
	}
	sameFS := map[string]bool{}
	var others []string
	for _, n := range names {
		dir := filepath.Dir(n)
		same, ok := sameFS[dir]
		if !ok {
			var s unix.Statfs_t
			same = unix.Statfs(dir, &s) == nil && s.Fsid == st.Fsid
			sameFS[dir] = same
		}
		if !same {
			others = append(others, n)
		}
	}
	return fsyncEach(others)
}

// umask returns the process's file mode creation mask, read from
// /proc/self/status (setting and restoring it with umask(2) would race
// with files created meanwhile). When it cannot be read it returns 0o777,
// so that every mode is set explicitly.
func umask() fs.FileMode {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0o777
	}
	for line := range bytes.Lines(status) {
		if v, found := bytes.CutPrefix(line, []byte("Umask:")); found {
			if m, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 8, 32); err == nil {
				return fs.FileMode(m)
			}
		}
	}
	return 0o777
}
