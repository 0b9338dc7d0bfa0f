// Package filewatch reloads a file when it changes, by polling. Polling
// works on every file system and catches both writes in place and
// replacement by rename (the usual atomic update, and what Kubernetes does
// to mounted ConfigMaps and Secrets), which inotify-style watches of the
// path itself miss.
package filewatch

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"time"
)

// DefaultInterval is how often Watch looks at the file when given zero.
const DefaultInterval = time.Second

// LoadFunc takes new file contents. It must either take all of data or
// keep what it had and return an error; the error must not quote data,
// which may be secret.
type LoadFunc func(data []byte) error

// Watch reads path, hands it to load and returns load's error. If that
// succeeds, it keeps watching in a goroutine until ctx is done: every
// interval it compares the file's size, modification time and identity
// (device and inode), and on any change reads the file and, if the bytes
// differ from what was last loaded, calls load again. A failed read or load
// is logged at error level with the path and the error, and the previous
// contents stay in force; the next change is tried afresh. A nil logger
// means slog.Default().
func Watch(ctx context.Context, path string, interval time.Duration, load LoadFunc, logger *slog.Logger) error {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if logger == nil {
		logger = slog.Default()
	}
	w := &watcher{path: path, load: load, log: logger}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	w.seen = fi
	if err := w.reload(); err != nil {
		return err
	}
	go w.run(ctx, interval)
	return nil
}

type watcher struct {
	path string
	load LoadFunc
	log  *slog.Logger

	seen      os.FileInfo // what the last look at the file found; nil: missing
	loaded    bool
	loadedSum [sha256.Size]byte // digest of the contents last loaded
}

func (w *watcher) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			w.poll()
		}
	}
}

// poll reloads the file if it looks different from the last look. A
// failure is logged once per change, not on every tick.
func (w *watcher) poll() {
	fi, err := os.Stat(w.path)
	if err != nil {
		if w.seen != nil {
			w.log.Error("watched file is unreadable; keeping previous contents", "path", w.path, "err", err)
		}
		w.seen = nil
		return
	}
	if w.seen != nil && sameFile(w.seen, fi) {
		return
	}
	w.seen = fi
	if err := w.reload(); err != nil {
		w.log.Error("reloading watched file failed; keeping previous contents", "path", w.path, "err", err)
	}
}

// reload reads the file and loads it unless its bytes are unchanged.
func (w *watcher) reload() error {
	data, err := os.ReadFile(w.path)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(data)
	if w.loaded && sum == w.loadedSum {
		return nil
	}
	if err := w.load(data); err != nil {
		return fmt.Errorf("load %s: %w", w.path, err)
	}
	w.loaded, w.loadedSum = true, sum
	return nil
}

// sameFile reports whether a and b describe the same, unchanged file.
func sameFile(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}
