package bolt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/kubegate/kubegate/store"
)

// crashChildEnv makes the test binary a write-load child for
// TestDurabilityAfterKill: it writes to the store at this path and prints
// every acknowledged write until it is killed.
const crashChildEnv = "KUBEGATE_BOLT_CRASH_CHILD"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		if err := crashChild(path, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashChild writes forever with 16 creating goroutines and one
// compare-and-swap counter, printing "create KEY REV" and
// "counter N REV" lines after each write is acknowledged.
func crashChild(path string, out io.Writer) error {
	s, err := Open(path, Options{HistoryRevisions: 2000})
	if err != nil {
		return err
	}
	ctx := context.Background()
	var mu sync.Mutex
	ack := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format, args...)
	}
	if _, err := s.Create(ctx, "/crash/counter", []byte("0")); err != nil && !errors.Is(err, store.ErrExists) {
		return err
	}
	run := fmt.Sprintf("%d", os.Getpid())
	errc := make(chan error, 17)
	for g := range 16 {
		go func() {
			for i := 0; ; i++ {
				key := fmt.Sprintf("/crash/%s/%d/%d", run, g, i)
				rev, err := s.Create(ctx, key, []byte(key))
				if err != nil {
					errc <- err
					return
				}
				ack("create %s %d\n", key, rev)
			}
		}()
	}
	go func() {
		for {
			kv, err := s.Get(ctx, "/crash/counter")
			if err != nil {
				errc <- err
				return
			}
			n, _ := strconv.Atoi(string(kv.Value))
			rev, err := s.Update(ctx, "/crash/counter", []byte(strconv.Itoa(n+1)), kv.ModRevision)
			if err != nil {
				errc <- err
				return
			}
			ack("counter %d %d\n", n+1, rev)
		}
	}()
	return <-errc
}

// TestDurabilityAfterKill kills a writing process with SIGKILL at a random
// point, ten times on the same file, and checks after each kill that every
// acknowledged write is there and the file is consistent.
func TestDurabilityAfterKill(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, seed))
	t.Logf("seed %d", seed)
	for round := range 10 {
		killAfter := 1 + rng.IntN(2000)
		t.Run(fmt.Sprintf("round %d kill after %d acks", round, killAfter), func(t *testing.T) {
			acks := runAndKill(t, path, killAfter)
			verifyAcks(t, path, acks)
		})
		if t.Failed() {
			return
		}
	}
}

type ack struct {
	kind string // "create" or "counter"
	key  string // the key, or the counter value
	rev  int64
}

// runAndKill starts the child on path, kills it with SIGKILL after n
// acknowledged writes, and returns every write it acknowledged.
func runAndKill(t *testing.T, path string, n int) []ack {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acks []ack
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 {
			t.Fatalf("child printed %q", sc.Text())
		}
		rev, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("child printed %q", sc.Text())
		}
		acks = append(acks, ack{f[0], f[1], rev})
		if len(acks) == n && !killed {
			// Lines already in the pipe are still read: they were
			// acknowledged before the kill.
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child exited by itself: %v; stderr: %s", err, stderr.String())
	}
	return acks
}

func verifyAcks(t *testing.T, path string, acks []ack) {
	t.Helper()
	s, err := Open(path, Options{HistoryRevisions: 2000})
	if err != nil {
		t.Fatalf("reopen after kill: %v", err)
	}
	defer s.Close()
	ctx := t.Context()
	if err := s.Check(ctx); err != nil {
		t.Fatalf("after kill: %v", err)
	}
	cur, _ := s.CurrentRevision(ctx)
	counter, err := s.Get(ctx, "/crash/counter")
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, a := range acks {
		if a.rev > cur {
			t.Errorf("write acknowledged at %d, above the current revision %d", a.rev, cur)
		}
		switch a.kind {
		case "create":
			kv, err := s.Get(ctx, a.key)
			if err != nil || kv.CreateRevision != a.rev || string(kv.Value) != a.key {
				lost++
				if lost <= 5 {
					t.Errorf("acknowledged create of %s at %d: got %+v, %v", a.key, a.rev, kv, err)
				}
			}
		case "counter":
			n, _ := strconv.Atoi(a.key)
			got, _ := strconv.Atoi(string(counter.Value))
			if got < n || counter.ModRevision < a.rev {
				t.Errorf("counter acknowledged as %d at %d, file has %d at %d", n, a.rev, got, counter.ModRevision)
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d acknowledged writes lost", lost, len(acks))
	}
	// The store goes on from where it stopped.
	rev, err := s.Create(ctx, fmt.Sprintf("/crash/after/%d", cur), nil)
	if err != nil || rev != cur+1 {
		t.Errorf("first write after reopening at %d: revision %d, %v", cur, rev, err)
	}
}
