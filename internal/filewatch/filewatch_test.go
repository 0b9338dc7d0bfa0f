package filewatch_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/filewatch"
	"github.com/kubegate/kubegate/internal/fsutil"
	"github.com/kubegate/kubegate/internal/testwait"
)

// store is a LoadFunc target that refuses contents starting with "bad".
type store struct {
	mu    sync.Mutex
	data  string
	loads int
}

func (s *store) Load(data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if bytes.HasPrefix(data, []byte("bad")) {
		return errors.New("line 1: not a valid record")
	}
	s.data = string(data)
	s.loads++
	return nil
}

func (s *store) get() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.data, s.loads
}

func replace(t *testing.T, path, data string) {
	t.Helper()
	if err := fsutil.WriteFile(path, []byte(data), fsutil.ModeKey, true); err != nil { // replaced by rename
		t.Fatal(err)
	}
}

func TestWatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(t *testing.T, path string, s *store, logs *testwait.Buffer)
	}{
		{name: "a write in place is loaded", run: func(t *testing.T, path string, s *store, _ *testwait.Buffer) {
			if err := os.WriteFile(path, []byte("second, longer"), 0o600); err != nil {
				t.Fatal(err)
			}
			testwait.For(t, 2*time.Second, "new contents loaded", func() (bool, string) { d, _ := s.get(); return d == "second, longer", strconv.Quote(d) })
		}},
		{name: "replacement by rename is loaded", run: func(t *testing.T, path string, s *store, _ *testwait.Buffer) {
			replace(t, path, "first") // same size and contents: no reload
			replace(t, path, "other")
			testwait.For(t, 2*time.Second, "renamed file loaded", func() (bool, string) { d, _ := s.get(); return d == "other", strconv.Quote(d) })
			if _, loads := s.get(); loads != 2 {
				t.Errorf("%d loads, want 2 (identical contents are not reloaded)", loads)
			}
		}},
		{name: "invalid contents keep the old ones and are logged without the data", run: func(t *testing.T, path string, s *store, logs *testwait.Buffer) {
			replace(t, path, "bad secret-token-123")
			testwait.For(t, 2*time.Second, "error logged", func() (bool, string) {
				return strings.Contains(logs.String(), "keeping previous contents"), "not in the log"
			})
			if d, _ := s.get(); d != "first" {
				t.Errorf("contents = %q, want the old %q", d, "first")
			}
			if l := logs.String(); strings.Contains(l, "secret-token-123") || !strings.Contains(l, path) || !strings.Contains(l, "line 1") {
				t.Errorf("log = %q, want the path and the reason but not the data", l)
			}
			replace(t, path, "fixed")
			testwait.For(t, 2*time.Second, "fixed file loaded", func() (bool, string) { d, _ := s.get(); return d == "fixed", strconv.Quote(d) })
		}},
		{name: "a file that disappears keeps the old contents until it is back", run: func(t *testing.T, path string, s *store, logs *testwait.Buffer) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			testwait.For(t, 2*time.Second, "missing file logged", func() (bool, string) { return strings.Contains(logs.String(), "unreadable"), "not in the log" })
			if d, _ := s.get(); d != "first" {
				t.Errorf("contents = %q, want the old %q", d, "first")
			}
			replace(t, path, "back")
			testwait.For(t, 2*time.Second, "restored file loaded", func() (bool, string) { d, _ := s.get(); return d == "back", strconv.Quote(d) })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "watched")
			if err := os.WriteFile(path, []byte("first"), 0o600); err != nil {
				t.Fatal(err)
			}
			s := &store{}
			logs := &testwait.Buffer{}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := filewatch.Watch(ctx, path, 10*time.Millisecond, s.Load, slog.New(slog.NewTextHandler(logs, nil))); err != nil {
				t.Fatal(err)
			}
			if d, _ := s.get(); d != "first" {
				t.Fatalf("initial contents = %q, want %q", d, "first")
			}
			tt.run(t, path, s, logs)
		})
	}
}

func TestWatchInitial(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		data    *string
		wantErr string
	}{
		{name: "a missing file is an error", wantErr: "no such file"},
		{name: "an invalid file is an error", data: ptr("bad"), wantErr: "not a valid record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "watched")
			if tt.data != nil {
				if err := os.WriteFile(path, []byte(*tt.data), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			err := filewatch.Watch(context.Background(), path, time.Second, (&store{}).Load, nil)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
