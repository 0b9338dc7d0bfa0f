package fsutil

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestModesUnderUmask checks that files get exactly their mode whatever
// the umask: created with it when the umask allows, set explicitly when
// the umask would take bits away. It changes the process umask, so it
// must not run in parallel with tests that create files.
func TestModesUnderUmask(t *testing.T) {
	for _, mask := range []int{0o022, 0o077, 0o000} {
		old := syscall.Umask(mask)
		if got := umask(); got != os.FileMode(mask) {
			t.Errorf("umask() = %#o, want %#o", got, mask)
		}
		dir := t.TempDir()
		files := []File{
			{Path: filepath.Join(dir, "x.key"), Data: []byte("k"), Mode: ModeKey},
			{Path: filepath.Join(dir, "x.crt"), Data: []byte("c"), Mode: ModePublic},
		}
		err := WriteFiles(files)
		if err == nil {
			err = WriteFile(filepath.Join(dir, "one.crt"), []byte("c"), ModePublic, false)
		}
		syscall.Umask(old)
		if err != nil {
			t.Fatalf("umask %#o: %v", mask, err)
		}
		files = append(files, File{Path: filepath.Join(dir, "one.crt"), Mode: ModePublic})
		for _, f := range files {
			fi, err := os.Stat(f.Path)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != f.Mode {
				t.Errorf("umask %#o: %s mode = %v, want %v", mask, filepath.Base(f.Path), got, f.Mode)
			}
		}
	}
}
