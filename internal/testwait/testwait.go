// Package testwait waits, in tests, for a state that other goroutines or
// processes bring about: a reload, a watch event, a server coming up; and
// collects what they write meanwhile.
package testwait

import (
	"bytes"
	"sync"
	"testing"
	"time"
)

// For calls f until it reports done, and fails t, naming what and the
// last thing f saw, if timeout passes first. f is called once more at the
// deadline, so a state reached just in time counts. It polls every 5 ms at
// first and backs off to every 100 ms, so that a quick state is seen at
// once and a slow one, such as a command run on every poll, costs little.
// f runs on the test's goroutine and may fail t itself.
func For(t testing.TB, timeout time.Duration, what string, f func() (done bool, seen string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		done, seen := f()
		if done {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			t.Fatalf("%s: still %s after %v", what, seen, timeout)
		}
		time.Sleep(min(pause, left))
	}
}

// Buffer collects what another goroutine or a child process writes, such
// as logs or stderr, for a test to read while writing goes on.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
