// Package progress draws one status line (a counter or a spinner with a
// label) for commands that run for more than a moment, and only on a
// terminal: a Reporter made for a writer that is not a terminal, or with
// TERM=dumb, writes nothing, so a command's output piped or redirected is
// what it would be without one.
//
// The line is redrawn in place with a carriage return and the ANSI erase
// of the line, at most ten times a second, and erased by Done, so that
// what the command prints afterwards starts on a clean line. Lines the
// command prints meanwhile go through Writer, which erases the status
// line first and draws it again after them.
//
// A Reporter is safe for concurrent use.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
)

// Erase returns the cursor to the start of the line and erases the line:
// what a Reporter writes before each redraw and to clear its line.
const Erase = "\r\x1b[2K"

// DefaultInterval is the least time between two redraws.
const DefaultInterval = 100 * time.Millisecond

// defaultWidth is the line width assumed when the terminal does not say.
const defaultWidth = 80

// spinnerFrames are drawn in turn before a spinner's label.
var spinnerFrames = [...]string{"|", "/", "-", `\`}

// Reporter draws the status line of one command. The zero value and nil
// draw nothing.
type Reporter struct {
	mu       sync.Mutex
	w        io.Writer // nil: disabled
	width    int
	interval time.Duration
	now      func() time.Time

	drawn    bool      // a status line is on the screen
	lastDraw time.Time // when it was drawn

	// The counter: label, done of total since start, the item last named.
	counting     bool
	label, item  string
	done, total  int
	countStarted time.Time

	// The spinner: its label, since when, the frame drawn last.
	spinning     bool
	spinLabel    string
	spinStarted  time.Time
	frame        int
	stopTicker   chan struct{}
	tickerExited chan struct{}
}

// New returns a Reporter drawing on w when w is a terminal (an *os.File
// whose descriptor term.IsTerminal accepts) and TERM is not "dumb";
// otherwise one that draws nothing.
func New(w io.Writer) *Reporter {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" || !term.IsTerminal(int(f.Fd())) {
		return &Reporter{}
	}
	width, _, err := term.GetSize(int(f.Fd()))
	if err != nil || width <= 0 {
		width = defaultWidth
	}
	return newReporter(w, width, DefaultInterval, time.Now)
}

// newReporter returns an enabled Reporter on w.
func newReporter(w io.Writer, width int, interval time.Duration, now func() time.Time) *Reporter {
	return &Reporter{w: w, width: width, interval: interval, now: now}
}

// Enabled reports whether r draws anything.
func (r *Reporter) Enabled() bool { return r != nil && r.w != nil }

// Count shows a counter: label, done of total, the rate and the time
// left, and item (the one being worked on; "" for none). It is redrawn at
// most once an interval, except for a new label and when done reaches
// total, which are always drawn. The rate counts from the first Count
// with this label.
func (r *Reporter) Count(label string, done, total int, item string) {
	if !r.Enabled() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	changed := !r.counting || r.label != label
	if changed {
		r.counting, r.label, r.countStarted = true, label, now
	}
	r.done, r.total, r.item = done, total, item
	if changed || done >= total || now.Sub(r.lastDraw) >= r.interval {
		r.drawLocked(now)
	}
}

// Spin shows a spinner before label, with the time since the spinner
// started, turning every interval until Done or Count. Calling it again
// changes the label, drawn at once unless the line was drawn less than an
// interval ago (the next turn draws it then).
func (r *Reporter) Spin(label string) {
	if !r.Enabled() {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	started := !r.spinning || r.counting
	r.counting, r.spinLabel = false, label
	if !r.spinning {
		r.spinning, r.spinStarted = true, now
		r.stopTicker, r.tickerExited = make(chan struct{}), make(chan struct{})
		go r.tick(r.stopTicker, r.tickerExited)
	}
	if started || now.Sub(r.lastDraw) >= r.interval {
		r.drawLocked(now)
	}
}

// tick turns the spinner until stop is closed.
func (r *Reporter) tick(stop <-chan struct{}, exited chan<- struct{}) {
	defer close(exited)
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			r.mu.Lock()
			if r.spinning && !r.counting {
				r.frame++
				r.drawLocked(r.now())
			}
			r.mu.Unlock()
		}
	}
}

// Done erases the status line and stops the spinner. The Reporter can be
// used again afterwards.
func (r *Reporter) Done() {
	if !r.Enabled() {
		return
	}
	r.mu.Lock()
	stop, exited := r.stopTicker, r.tickerExited
	r.spinning, r.counting, r.stopTicker, r.tickerExited = false, false, nil, nil
	r.eraseLocked()
	r.mu.Unlock()
	if stop != nil {
		close(stop)
		<-exited
	}
}

// Writer returns the writer for what the command prints while the status
// line shows: each write erases the line, writes, and, ending with a
// newline, draws the line again below. For a Reporter that draws
// nothing it is w itself, so the command's output is unchanged.
func (r *Reporter) Writer(w io.Writer) io.Writer {
	if !r.Enabled() {
		return w
	}
	return &lineWriter{r: r, w: w}
}

type lineWriter struct {
	r *Reporter
	w io.Writer
}

func (lw *lineWriter) Write(p []byte) (int, error) {
	r := lw.r
	r.mu.Lock()
	defer r.mu.Unlock()
	wasDrawn := r.drawn
	r.eraseLocked()
	n, err := lw.w.Write(p)
	if wasDrawn && len(p) > 0 && p[len(p)-1] == '\n' {
		r.drawLocked(r.now())
	}
	return n, err
}

// eraseLocked erases the status line if one is drawn.
func (r *Reporter) eraseLocked() {
	if r.drawn {
		io.WriteString(r.w, Erase)
		r.drawn = false
	}
}

// drawLocked draws the current state.
func (r *Reporter) drawLocked(now time.Time) {
	var line string
	switch {
	case r.counting:
		line = counterLine(r.label, r.done, r.total, r.item, now.Sub(r.countStarted))
	case r.spinning:
		line = fmt.Sprintf("%s %s (%s)", spinnerFrames[r.frame%len(spinnerFrames)], r.spinLabel, now.Sub(r.spinStarted).Truncate(time.Second))
	default:
		return
	}
	// A line wider than the terminal would wrap, and the carriage return
	// would then redraw only its last part.
	io.WriteString(r.w, Erase+truncate(line, r.width-1))
	r.drawn, r.lastDraw = true, now
}

// counterLine is "LABEL DONE/TOTAL (P%) RATE/s, ETA Ns ITEM".
func counterLine(label string, done, total int, item string, elapsed time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d/%d", label, done, total)
	if total > 0 {
		fmt.Fprintf(&b, " (%d%%)", done*100/total)
	}
	if secs := elapsed.Seconds(); done > 0 && secs >= 0.5 {
		rate := float64(done) / secs
		fmt.Fprintf(&b, " %.0f/s", rate)
		if left := total - done; left > 0 {
			fmt.Fprintf(&b, ", ETA %s", time.Duration(float64(left)/rate*float64(time.Second)).Round(time.Second))
		}
	}
	if item != "" {
		b.WriteString(" " + item)
	}
	return b.String()
}

// truncate cuts s to at most width runes, marking the cut with "…".
func truncate(s string, width int) string {
	if width < 1 || utf8.RuneCountInString(s) <= width {
		return s
	}
	runes := []rune(s)
	return string(runes[:width-1]) + "…"
}
