package up

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// eventLog records, in order, the steps Start tells Progress and the
// first words of what it writes to Status.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) add(e string) {
	l.mu.Lock()
	l.events = append(l.events, e)
	l.mu.Unlock()
}

func (l *eventLog) Write(p []byte) (int, error) {
	first, _, _ := strings.Cut(string(p), ":")
	l.add("status " + first)
	return len(p), nil
}

func TestStartTellsItsStepsAndEndsThemBeforeItIsUp(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cluster")
	port := freePort(t)
	log := &eventLog{}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := Start(ctx, Options{Dir: dir, SecurePort: port, InitPKI: initPKI, Logger: slog.New(slog.DiscardHandler),
		Status: log, Progress: func(step string) { log.add("step " + step) }})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	want := []string{
		"step writing the PKI and kubeconfigs into " + dir,
		"step starting the API server",
		fmt.Sprintf("step starting the gateway on https://127.0.0.1:%d", port),
		"step ",
		"status kubegate is up",
	}
	log.mu.Lock()
	got := slices.Clone(log.events)
	log.mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("Start told\n%q\nwant\n%q", got, want)
	}
}
