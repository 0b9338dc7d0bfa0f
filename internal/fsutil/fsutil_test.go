package fsutil

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
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

func TestWriteFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := []File{
		{Path: filepath.Join(dir, "a", "x.key"), Data: []byte("key"), Mode: ModeKey},
		{Path: filepath.Join(dir, "a", "x.crt"), Data: []byte("crt"), Mode: ModePublic},
		{Path: filepath.Join(dir, "b", "y.crt"), Data: []byte("y"), Mode: ModePublic},
	}
	if err := WriteFiles(files); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		fi, err := os.Stat(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != f.Mode {
			t.Errorf("%s mode = %v, want %v", f.Path, fi.Mode().Perm(), f.Mode)
		}
		if b, _ := os.ReadFile(f.Path); string(b) != string(f.Data) {
			t.Errorf("%s = %q, want %q", f.Path, b, f.Data)
		}
	}

	// One existing file without Overwrite refuses the whole batch.
	again := []File{
		{Path: filepath.Join(dir, "a", "new.crt"), Data: []byte("new"), Mode: ModePublic},
		{Path: files[0].Path, Data: []byte("other"), Mode: ModeKey},
	}
	if err := WriteFiles(again); !errors.Is(err, ErrExists) {
		t.Fatalf("batch over an existing file: err = %v, want ErrExists", err)
	}
	if _, err := os.Stat(again[0].Path); err == nil {
		t.Error("a refused batch wrote a file")
	}
	again[1].Overwrite = true
	if err := WriteFiles(again); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(files[0].Path); string(b) != "other" {
		t.Errorf("overwritten file = %q", b)
	}
	for _, d := range []string{"a", "b"} {
		entries, _ := os.ReadDir(filepath.Join(dir, d))
		for _, e := range entries {
			if filepath.Ext(e.Name()) != ".crt" && filepath.Ext(e.Name()) != ".key" {
				t.Errorf("left behind %s", e.Name())
			}
		}
	}
}

func TestNoLinkedDirs(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "root")
	elsewhere := filepath.Join(base, "elsewhere")
	for _, d := range []string{filepath.Join(root, "a", "b"), filepath.Join(elsewhere, "c")} {
		if err := os.MkdirAll(d, ModeDir); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, "a", "link")); err != nil {
		t.Fatal(err)
	}
	// root, the caller's choice, may itself be a link.
	rootLink := filepath.Join(base, "root-link")
	if err := os.Symlink(root, rootLink); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		root, dir string
		want      string // "" for no error
	}{
		{root, ".", ""},
		{root, "a/b", ""},
		{root, "a/b/not/yet", ""},
		{rootLink, "a/b", ""},
		{root, "a/link", filepath.Join(root, "a", "link") + " is a symbolic link (to " + elsewhere + "); kubegate reads and writes key material only in directories inside " + root + ", not through links: replace the link with a directory"},
		{root, "a/link/c", filepath.Join(root, "a", "link") + " is a symbolic link (to " + elsewhere + ")"},
		{root, "../elsewhere", "../elsewhere is not inside " + root},
	} {
		err := NoLinkedDirs(tt.root, filepath.FromSlash(tt.dir))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("NoLinkedDirs(%s, %s) = %v, want nil", tt.root, tt.dir, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("NoLinkedDirs(%s, %s) = %v, want %q", tt.root, tt.dir, err, tt.want)
		case strings.Contains(tt.dir, "link") && !errors.Is(err, ErrLinkedDir):
			t.Errorf("NoLinkedDirs(%s, %s) = %v, want ErrLinkedDir", tt.root, tt.dir, err)
		}
	}
}

func TestCreateFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "x.key.new")
	if err := CreateFile(path, []byte("one"), ModeKey); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != ModeKey {
		t.Errorf("mode: %v %v, want %v", fi, err, ModeKey)
	}
	// Whatever is there is left alone: a file, or a link to one.
	if err := CreateFile(path, []byte("two"), ModeKey); !errors.Is(err, fs.ErrExist) {
		t.Errorf("over a file: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "one" {
		t.Errorf("content = %q, want %q", b, "one")
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(filepath.Join(dir, "target"), link); err != nil {
		t.Fatal(err)
	}
	if err := CreateFile(link, []byte("two"), ModeKey); !errors.Is(err, fs.ErrExist) {
		t.Errorf("over a dangling link: %v, want fs.ErrExist", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "target")); err == nil {
		t.Error("CreateFile wrote through a link")
	}
}
