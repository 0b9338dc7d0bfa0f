package fsutil

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "key.pem")

	if err := WriteFile(path, []byte("one"), ModeKey, false); err != nil {
		t.Fatalf("first write: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != ModeKey {
		t.Errorf("file mode = %v, want %v", got, ModeKey)
	}
	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if got := di.Mode().Perm(); got != ModeDir {
		t.Errorf("dir mode = %v, want %v", got, ModeDir)
	}

	err = WriteFile(path, []byte("two"), ModeKey, false)
	if !errors.Is(err, ErrExists) {
		t.Fatalf("second write without overwrite: err = %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one" {
		t.Errorf("content after refused write = %q, want %q", b, "one")
	}

	if err := WriteFile(path, []byte("two"), ModeKey, true); err != nil {
		t.Fatalf("overwrite: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "two" {
		t.Errorf("content after overwrite = %q, want %q", b, "two")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("directory has %d entries, want 1 (no temp files left)", len(entries))
	}
}

func TestCheckWritableDir(t *testing.T) {
	t.Parallel()
	// A path below a regular file is unwritable even for root.
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CheckWritableDir(filepath.Join(file, "pki")); err == nil {
		t.Fatal("CheckWritableDir under a regular file: got nil error")
	}
	if err := CheckWritableDir(filepath.Join(dir, "ok")); err != nil {
		t.Fatalf("CheckWritableDir(new dir): %v", err)
	}
}
