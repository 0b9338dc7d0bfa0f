package testwait

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestForReturnsOnceDone(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	start := time.Now()
	For(t, 5*time.Second, "third call", func() (bool, string) {
		return calls.Add(1) == 3, "fewer calls"
	})
	if n := calls.Load(); n != 3 {
		t.Errorf("f called %d times, want 3", n)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %v for three quick polls", d)
	}
}

// fakeT records a failure instead of ending the test.
type fakeT struct {
	testing.TB
	failed string
}

func (f *fakeT) Helper() {}

func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
	panic(f)
}

func TestForFailsAtTheDeadlineNamingWhatItSaw(t *testing.T) {
	t.Parallel()
	ft := &fakeT{TB: t}
	var last time.Time
	start := time.Now()
	func() {
		defer func() {
			if r := recover(); r != ft {
				t.Fatalf("recovered %v, want the fake test's failure", r)
			}
		}()
		For(ft, 200*time.Millisecond, "ready", func() (bool, string) {
			last = time.Now()
			return false, "starting"
		})
	}()
	if !strings.Contains(ft.failed, "ready") || !strings.Contains(ft.failed, "starting") || !strings.Contains(ft.failed, "200ms") {
		t.Errorf("failure %q does not name what, what was seen and the timeout", ft.failed)
	}
	if d := last.Sub(start); d < 200*time.Millisecond {
		t.Errorf("last call %v after the start, want one at the deadline (200ms)", d)
	}
}
