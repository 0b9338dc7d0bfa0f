package testgolden

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what a check reports.
type recorder struct {
	testing.TB
	errors []string
	fatal  bool
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// Fatalf records the failure and ends the goroutine, as testing.T does.
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = true
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
	runtime.Goexit()
}

func (r *recorder) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

// run runs check in a goroutine of its own, as t.Fatal ends the
// goroutine it is called in.
func run(path string, got []byte, update bool) *recorder {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		check(r, path, got, update)
	}()
	<-done
	return r
}

func TestCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "testdata", "out.golden")

	if r := run(path, []byte("a\n"), false); !r.fatal || !strings.Contains(r.errors[0], "-update") {
		t.Errorf("a missing golden file without -update: %q, want a fatal error naming -update", r.errors)
	}
	if r := run(path, []byte("a\n"), true); len(r.errors) != 0 {
		t.Errorf("with -update: %q, want no error", r.errors)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "a\n" {
		t.Errorf("with -update the file holds %q (%v), want %q", data, err, "a\n")
	}
	if r := run(path, []byte("a\n"), false); len(r.errors) != 0 {
		t.Errorf("the same output: %q, want no error", r.errors)
	}
	r := run(path, []byte("b\n"), false)
	if len(r.errors) != 1 || r.fatal || !strings.Contains(r.errors[0], "got:\nb\n\nwant:\na\n") {
		t.Errorf("other output: %q, want one error showing got b and want a", r.errors)
	}
	if data, _ := os.ReadFile(path); string(data) != "a\n" {
		t.Errorf("a failed check rewrote the file to %q", data)
	}
}
