package main

import (
	"os"
	"path/filepath"
	"testing"
)

// linkedDir makes DIR/rel a symbolic link to a new, world-writable
// directory elsewhere and returns that directory.
func linkedDir(t *testing.T, dir, rel string) string {
	t.Helper()
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Mkdir(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(elsewhere, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(dir, rel)); err != nil {
		t.Fatal(err)
	}
	return elsewhere
}

// TestCommandsRefuseLinkedDirectories_H6: ca rotate and pki init end
// with one line naming a linked directory inside --dir, exit 1, and
// write nothing through it.
func TestCommandsRefuseLinkedDirectories_H6(t *testing.T) {
	t.Parallel()
	line := func(dir, rel, target string) string {
		return "kubegate: " + filepath.Join(dir, rel) + " is a symbolic link (to " + target + "); kubegate reads and writes key material only in directories inside " +
			dir + ", not through links: replace the link with a directory\n"
	}
	empty := func(dir string) {
		t.Helper()
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s holds %d files written through the link", dir, len(entries))
		}
	}

	dir := filepath.Join(t.TempDir(), "cluster")
	if code, _, errOut := runCLI(t, "", "pki", "init", "--dir", dir); code != 0 {
		t.Fatalf("pki init: %d %s", code, errOut)
	}
	elsewhere := linkedDir(t, dir, "pki/rotation")
	code, _, errOut := runCLI(t, "", "ca", "rotate", "--dir", dir)
	if want := line(dir, "pki/rotation", elsewhere); code != 1 || errOut != want {
		t.Errorf("ca rotate: exit %d, stderr %q; want exit 1 and %q", code, errOut, want)
	}
	empty(elsewhere)
	for _, f := range []string{"pki/rotation.json", "pki/rotation.lock"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
			t.Errorf("ca rotate left %s", f)
		}
	}

	dir = filepath.Join(t.TempDir(), "cluster")
	elsewhere = linkedDir(t, dir, "pki")
	code, _, errOut = runCLI(t, "", "pki", "init", "--dir", dir)
	if want := line(dir, "pki", elsewhere); code != 1 || errOut != want {
		t.Errorf("pki init: exit %d, stderr %q; want exit 1 and %q", code, errOut, want)
	}
	empty(elsewhere)
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("pki init wrote %d files in %s", len(entries)-1, dir)
	}
}
