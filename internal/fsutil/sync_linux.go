package fsutil

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncAll makes the named files durable. On Linux one syncfs(2) on the
// file system that holds them does it in a single journal commit; files
// on other file systems (a batch spanning mounts) are fsynced one by one.
func syncAll(f *os.File, names []string) error {
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return fsyncEach(names)
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return fsyncEach(names)
	}
	var others []string
	for _, n := range names {
		var s unix.Statfs_t
		if err := unix.Statfs(n, &s); err != nil || s.Fsid != st.Fsid {
			others = append(others, n)
		}
	}
	return fsyncEach(others)
}
