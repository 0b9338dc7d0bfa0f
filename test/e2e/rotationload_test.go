package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/internal/testwait"
)

// rotationLoad is the load generator of the rotation test (H.6): for each
// identity, one worker on kept-alive connections and one that opens a new
// connection, with a full TLS handshake, for every request. Each worker
// asks the gateway who it is (a SelfSubjectReview) in a closed loop and
// counts an attempt as failed unless the answer is 201 with its own user
// name. Like a client whose kubeconfig and token file are redistributed
// during a rotation, a worker watches its files and, when one changes,
// builds its client again with client-go's TLS and token setup and closes
// the connections of the old one.
type rotationLoad struct {
	phase   atomic.Pointer[string]
	workers []*loadWorker
	cancel  context.CancelFunc
	done    sync.WaitGroup

	mu       sync.Mutex
	counts   map[[2]string]*loadCount // by phase and identity
	phases   []string                 // in order
	failures map[string]int           // by phase, identity and error
	reported bool
}

// loadIdentity is a user of the load: a kubeconfig, the files it names
// (read again when they change) and the user name the gateway must see.
type loadIdentity struct {
	name, kubeconfig, user string
	files                  []string // kubeconfig plus the CA and token files it names
}

type loadCount struct{ requests, failures int }

type loadWorker struct {
	id      loadIdentity
	newConn bool
	// loaded is the digest of the files its current client was built
	// from; okSince counts the answers that client got right.
	loaded  atomic.Pointer[[sha256.Size]byte]
	okSince atomic.Int64
	ok      atomic.Int64 // right answers in all
	// buildErr is why the client could not be built from the files as
	// they are now, if it could not.
	buildErr atomic.Pointer[error]
}

func startRotationLoad(t *testing.T, ids ...loadIdentity) *rotationLoad {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &rotationLoad{cancel: cancel, counts: map[[2]string]*loadCount{}, failures: map[string]int{}}
	l.setPhase("before the rotation")
	t.Cleanup(func() {
		l.stop()
		if t.Failed() && !l.reported {
			l.report(t)
		}
	})
	for _, id := range ids {
		for _, newConn := range []bool{false, true} {
			w := &loadWorker{id: id, newConn: newConn}
			c, sum, err := w.client()
			if err != nil {
				t.Fatalf("load as %s: %v", id.name, err)
			}
			w.loaded.Store(&sum)
			l.workers = append(l.workers, w)
			l.done.Add(1)
			go func() {
				defer l.done.Done()
				l.run(ctx, w, c)
			}()
		}
	}
	return l
}

// setPhase labels the requests that start from now on.
func (l *rotationLoad) setPhase(p string) {
	l.mu.Lock()
	l.phases = append(l.phases, p)
	l.mu.Unlock()
	l.phase.Store(&p)
}

func (l *rotationLoad) stop() {
	l.cancel()
	l.done.Wait()
}

// waitCurrent waits until every worker has built its client from the
// files as they are now and got at least ten right answers with it, ten of
// them from now on.
func (l *rotationLoad) waitCurrent(t *testing.T, what string) {
	t.Helper()
	from := make([]int64, len(l.workers))
	for i, w := range l.workers {
		from[i] = w.ok.Load()
	}
	testwait.For(t, 20*time.Second, "the load using "+what, func() (bool, string) {
		for i, w := range l.workers {
			if *w.loaded.Load() != digestFiles(w.id.files) || w.okSince.Load() < 10 || w.ok.Load()-from[i] < 10 {
				seen := fmt.Sprintf("%s (new connections %v): %d right answers with its current files", w.id.name, w.newConn, w.okSince.Load())
				if err := w.buildErr.Load(); err != nil {
					seen += fmt.Sprintf("; the files as they are now give %v", *err)
				}
				return false, seen
			}
		}
		return true, ""
	})
}

// report logs requests and failures by phase and identity and returns the
// totals.
func (l *rotationLoad) report(t *testing.T) (requests, failures int) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reported = true
	var names []string
	for _, w := range l.workers {
		if !slices.Contains(names, w.id.name) {
			names = append(names, w.id.name)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s", "requests (failures)")
	for _, n := range names {
		fmt.Fprintf(&b, " %18s", n)
	}
	for _, p := range l.phases {
		fmt.Fprintf(&b, "\n%-22s", p)
		for _, n := range names {
			c := l.counts[[2]string{p, n}]
			if c == nil {
				c = &loadCount{}
			}
			fmt.Fprintf(&b, " %18s", fmt.Sprintf("%d (%d)", c.requests, c.failures))
			requests += c.requests
			failures += c.failures
		}
	}
	fmt.Fprintf(&b, "\ntotal: %d requests, %d failed", requests, failures)
	for _, f := range slices.Sorted(maps.Keys(l.failures)) {
		fmt.Fprintf(&b, "\n  %6d  %s", l.failures[f], f)
	}
	t.Log(b.String())
	return requests, failures
}

// perPhase returns the fewest requests any identity made in any phase.
func (l *rotationLoad) perPhase() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	least := -1
	for _, p := range l.phases {
		for _, w := range l.workers {
			n := 0
			if c := l.counts[[2]string{p, w.id.name}]; c != nil {
				n = c.requests
			}
			if least < 0 || n < least {
				least = n
			}
		}
	}
	return least
}

func (l *rotationLoad) record(phase, name string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := [2]string{phase, name}
	c := l.counts[k]
	if c == nil {
		c = &loadCount{}
		l.counts[k] = c
	}
	c.requests++
	if err != nil {
		c.failures++
		l.failures[fmt.Sprintf("%s, %s: %v", phase, name, err)]++
	}
}

func (l *rotationLoad) run(ctx context.Context, w *loadWorker, c *loadClient) {
	checked := time.Now()
	for ctx.Err() == nil {
		if time.Since(checked) > 100*time.Millisecond {
			checked = time.Now()
			if digestFiles(w.id.files) != *w.loaded.Load() {
				next, sum, err := w.client()
				if err != nil {
					// Kept for waitCurrent's message; tried again soon.
					w.buildErr.Store(&err)
					continue
				}
				w.buildErr.Store(nil)
				c.transport.CloseIdleConnections()
				c = next
				w.okSince.Store(0)
				w.loaded.Store(&sum)
			}
		}
		phase := *l.phase.Load()
		err := w.whoami(ctx, c)
		if ctx.Err() != nil {
			return // stopped mid-request: not an answer of the server
		}
		if err == nil {
			w.okSince.Add(1)
			w.ok.Add(1)
		}
		l.record(phase, w.id.name, err)
	}
}

// loadClient is a worker's client, built from its files.
type loadClient struct {
	http      *http.Client
	transport *http.Transport // under client-go's wrappers, which cannot close its connections
	host      string
}

// client builds the worker's HTTP client from its kubeconfig as client-go
// does, and returns the digest of the files it read.
func (w *loadWorker) client() (*loadClient, [sha256.Size]byte, error) {
	sum := digestFiles(w.id.files)
	cfg, err := clientcmd.BuildConfigFromFlags("", w.id.kubeconfig)
	if err != nil {
		return nil, sum, err
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, sum, err
	}
	transport := &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: w.newConn, ForceAttemptHTTP2: true}
	rt, err := rest.HTTPWrappersForConfig(cfg, transport)
	if err != nil {
		return nil, sum, err
	}
	if digestFiles(w.id.files) != sum {
		return nil, sum, fmt.Errorf("%s changed while read", w.id.kubeconfig)
	}
	return &loadClient{http: &http.Client{Transport: rt, Timeout: 10 * time.Second}, transport: transport, host: cfg.Host}, sum, nil
}

func (w *loadWorker) whoami(ctx context.Context, c *loadClient) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.host+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
		strings.NewReader(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusCreated {
		return fmt.Errorf("status %d: %s", res.StatusCode, bytes.TrimSpace(body))
	}
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal(body, &review); err != nil {
		return err
	}
	if got := review.Status.UserInfo.Username; got != w.id.user {
		return fmt.Errorf("answered as %q, want %q", got, w.id.user)
	}
	return nil
}

// digestFiles hashes the contents of files.
func digestFiles(files []string) [sha256.Size]byte {
	h := sha256.New()
	for _, f := range files {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(h, "%d:", len(data))
		h.Write(data)
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}
