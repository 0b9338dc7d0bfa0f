package progress

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/kubegate/kubegate/internal/testwait"
)

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestReporter(width int) (*Reporter, *testwait.Buffer, *clock) {
	s, c := &testwait.Buffer{}, &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	return newReporter(s, width, DefaultInterval, c.now), s, c
}

func TestCounterRedrawsInPlaceThrottledAndAlwaysDrawsTheLast(t *testing.T) {
	r, s, c := newTestReporter(200)
	for i := 1; i <= 100; i++ {
		r.Count("issuing", i, 100, "")
		c.add(10 * time.Millisecond) // ten counts per redraw interval
	}
	out := s.String()
	frames := strings.Split(out, Erase)[1:]
	if len(frames) < 2 || len(frames) > 12 {
		t.Fatalf("got %d redraws of 100 counts ten milliseconds apart, want about one per %s: %q", len(frames), DefaultInterval, out)
	}
	if !strings.HasPrefix(frames[0], "issuing 1/100 (1%)") {
		t.Errorf("first frame = %q, want the first count drawn at once", frames[0])
	}
	// 100 in 990 ms: about 101/s, nothing left.
	if last := frames[len(frames)-1]; last != "issuing 100/100 (100%) 101/s" {
		t.Errorf("last frame = %q, want %q", last, "issuing 100/100 (100%) 101/s")
	}
	if strings.Contains(out, "\n") {
		t.Errorf("the counter wrote a newline: %q", out)
	}
	r.Done()
	if !strings.HasSuffix(s.String(), Erase) {
		t.Errorf("after Done the screen ends %q, want the line erased", s.String()[max(0, len(s.String())-20):])
	}
}

func TestCounterLineShowsRateAndTimeLeft(t *testing.T) {
	for _, tc := range []struct {
		name        string
		done, total int
		item        string
		elapsed     time.Duration
		want        string
	}{
		{"at start", 0, 2000, "", 0, "issuing 0/2000 (0%)"},
		{"too early for a rate", 10, 2000, "", 100 * time.Millisecond, "issuing 10/2000 (0%)"},
		{"midway", 500, 2000, "", time.Second, "issuing 500/2000 (25%) 500/s, ETA 3s"},
		{"with an item", 3, 14, "pki/apiserver.crt", 2 * time.Second, "issuing 3/14 (21%) 2/s, ETA 7s pki/apiserver.crt"},
		{"no total", 0, 0, "", time.Second, "issuing 0/0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := counterLine("issuing", tc.done, tc.total, tc.item, tc.elapsed); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLineIsCutToTheTerminalWidth(t *testing.T) {
	r, s, _ := newTestReporter(20)
	r.Count("renewing", 1, 2, "pki/apiserver-kubelet-client.crt")
	frame := strings.TrimPrefix(s.String(), Erase)
	if n := len([]rune(frame)); n != 19 {
		t.Errorf("frame %q has %d characters, want 19 on a terminal 20 wide (no wrap)", frame, n)
	}
	if !strings.HasSuffix(frame, "…") {
		t.Errorf("frame %q does not mark the cut", frame)
	}
}

func TestSpinnerTurnsShowsElapsedTimeAndStopsOnDone(t *testing.T) {
	s := &testwait.Buffer{}
	r := newReporter(s, 200, 5*time.Millisecond, time.Now)
	r.Spin("waiting for approval of jane-x7k2p")
	testwait.For(t, 10*time.Second, "the spinner to turn", func() (bool, string) {
		frames := strings.Split(s.String(), Erase)
		return len(frames) >= 4 && frames[1][:1] != frames[3][:1], fmt.Sprintf("%q", frames)
	})
	r.Spin("starting the gateway")
	newLabel := regexp.MustCompile(`[-|/\\] starting the gateway \([0-9]+s\)`)
	testwait.For(t, 10*time.Second, "the new label to be drawn", func() (bool, string) {
		return newLabel.MatchString(s.String()), fmt.Sprintf("%q", s.String())
	})
	r.Done()
	out := s.String()
	if !strings.HasPrefix(out, Erase+"| waiting for approval of jane-x7k2p (0s)") {
		t.Errorf("no first frame at once with the label and elapsed time in %q", out)
	}
	if !strings.HasSuffix(out, Erase) {
		t.Errorf("the line is not erased after Done: %q", out)
	}
}

func TestSpinnerShowsTimeSinceItStartedAndThrottlesNewLabels(t *testing.T) {
	// The spinner does not turn within the test: only Spin draws.
	s, c := &testwait.Buffer{}, &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	r := newReporter(s, 200, time.Hour, c.now)
	defer r.Done()
	r.Spin("trust-both: reading the tree")
	c.add(2*time.Hour + 500*time.Millisecond)
	r.Spin("trust-both: minting the new cluster CA")
	r.Spin("trust-both: writing pki/ca.crt (1/9)") // within the interval: drawn by the next turn
	out := s.String()
	if want := Erase + "| trust-both: minting the new cluster CA (2h0m0s)"; !strings.Contains(out, want) {
		t.Errorf("got %q, want %q: the time since the spinner started", out, want)
	}
	if strings.Contains(out, Erase+"| trust-both: writing") {
		t.Errorf("a label given within the interval of the last draw was drawn at once: %q", out)
	}
}

func TestDoneWaitsForTheSpinnerToStop(t *testing.T) {
	r, s, _ := newTestReporter(80)
	r.Spin("starting the API server")
	r.mu.Lock()
	exited := r.tickerExited
	r.mu.Unlock()
	r.Done()
	select {
	case <-exited:
	default:
		t.Fatal("Done returned while the spinner's goroutine still ran")
	}
	if out := s.String(); !strings.HasSuffix(out, Erase) {
		t.Errorf("the line is not erased after Done: %q", out)
	}
}

func TestWriterPrintsLinesAboveTheStatusLine(t *testing.T) {
	r, s, _ := newTestReporter(200)
	r.Count("renewing", 1, 2, "apiserver")
	w := r.Writer(s)
	fmt.Fprintln(w, "renewed pki/apiserver.crt (expires 2027-01-02)")
	want := Erase + "renewing 1/2 (50%) apiserver" + Erase + "renewed pki/apiserver.crt (expires 2027-01-02)\n" + Erase + "renewing 1/2 (50%) apiserver"
	if got := s.String(); got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	r.Done()
	fmt.Fprintln(w, "done")
	if got := s.String(); !strings.HasSuffix(got, Erase+"done\n") {
		t.Errorf("after Done a line is written as is, got %q", got)
	}
}

func TestDisabledReporterWritesNothing(t *testing.T) {
	var buf bytes.Buffer
	r := New(&buf)
	if r.Enabled() {
		t.Fatal("a Reporter on a bytes.Buffer is enabled")
	}
	r.Count("issuing", 1, 2, "x")
	r.Spin("waiting")
	r.Done()
	if w := r.Writer(&buf); w != &buf {
		t.Errorf("Writer of a disabled Reporter is %T, want the writer itself", w)
	}
	if buf.Len() != 0 {
		t.Errorf("a disabled Reporter wrote %q", buf.String())
	}
	var nilReporter *Reporter
	nilReporter.Count("issuing", 1, 2, "")
	nilReporter.Spin("waiting")
	nilReporter.Done()
}

func TestNewDrawsOnATerminalOnly(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, tc := range []struct {
		name, term string
		w          *os.File
		want       bool
	}{
		{"terminal", "xterm-256color", tty, true},
		{"terminal without TERM", "", tty, true},
		{"dumb terminal", "dumb", tty, false},
		{"file", "xterm-256color", file, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("TERM", tc.term)
			if got := New(tc.w).Enabled(); got != tc.want {
				t.Errorf("New(%s) with TERM=%q: Enabled() = %v, want %v", tc.name, tc.term, got, tc.want)
			}
		})
	}
}

func TestConcurrentUse(t *testing.T) {
	s := &testwait.Buffer{}
	r := newReporter(s, 80, time.Millisecond, time.Now)
	w := r.Writer(s)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				switch g {
				case 0:
					r.Count("issuing", i, 200, "")
				case 1:
					fmt.Fprintf(w, "line %d\n", i)
				case 2:
					r.Spin("waiting")
				default:
					if i%50 == 0 {
						r.Done()
					}
				}
			}
		})
	}
	wg.Wait()
	r.Done()
	if got := strings.Count(s.String(), "\n"); got != 200 {
		t.Errorf("got %d lines through Writer, want 200", got)
	}
}

func TestCounterDrawsANewLabelAtOnce(t *testing.T) {
	r, s, _ := newTestReporter(200)
	r.Count("renewing", 11, 11, "")
	r.Count("writing", 0, 11, "apiserver")
	if got, want := s.String(), Erase+"renewing 11/11 (100%)"+Erase+"writing 0/11 (0%) apiserver"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
