package etcd

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// errMemberDown is the cancellation cause of a request abandoned because its
// member stopped answering the probes (docs/kubernetes-behaviour.md J.4).
var errMemberDown = errors.New("etcd member stopped answering")

// member is one etcd member with a client of its own, so that the store
// knows which member each request went to.
type member struct {
	endpoint string
	cli      *clientv3.Client

	mu       sync.Mutex
	up       bool
	inFlight map[*context.CancelCauseFunc]struct{}
}

// begin starts a request on m: the returned context is cancelled with
// errMemberDown if m is marked down while the request runs. end must be
// called when the request returns.
func (m *member) begin(ctx context.Context) (_ context.Context, end func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	m.mu.Lock()
	m.inFlight[&cancel] = struct{}{}
	m.mu.Unlock()
	return ctx, func() {
		m.mu.Lock()
		delete(m.inFlight, &cancel)
		m.mu.Unlock()
		cancel(nil)
	}
}

// setUp records a probe's result and reports whether it changed the
// member's state. A member that goes down with others still up has its
// requests in flight cancelled, so that they are tried on another.
func (m *member) setUp(up, othersUp bool) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.up == up {
		return false
	}
	m.up = up
	if !up && othersUp {
		for cancel := range m.inFlight {
			(*cancel)(errMemberDown)
		}
	}
	return true
}

func (m *member) isUp() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.up
}

// pool is the members, picked in turn among those that answer.
type pool struct {
	members []*member
	next    atomic.Uint64
}

// pick returns the next member that is up and not in tried; when every
// member not tried is down, the next of them, as a member that does not
// answer the probes may still answer requests; nil when all were tried.
func (p *pool) pick(tried []*member) *member {
	n := len(p.members)
	start := int(p.next.Add(1))
	var fallback *member
	for i := range n {
		m := p.members[(start+i)%n]
		if contains(tried, m) {
			continue
		}
		if m.isUp() {
			return m
		}
		if fallback == nil {
			fallback = m
		}
	}
	return fallback
}

func contains(ms []*member, m *member) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// upEndpoints returns the endpoints of the members that are up, or every
// endpoint when none is.
func (p *pool) upEndpoints() []string {
	var up, all []string
	for _, m := range p.members {
		all = append(all, m.endpoint)
		if m.isUp() {
			up = append(up, m.endpoint)
		}
	}
	if len(up) == 0 {
		return all
	}
	return up
}

// probe asks every member, each on its own with timeout, for a
// serializable read of key, which a member answers from its own data
// without its peers, and marks each up or down by the answer. It reports
// whether any member changed state.
func (p *pool) probe(key string, timeout time.Duration, log *slog.Logger) bool {
	ok := make([]bool, len(p.members))
	var wg sync.WaitGroup
	for i, m := range p.members {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			_, err := m.cli.Get(ctx, key, clientv3.WithSerializable(), clientv3.WithCountOnly())
			ok[i] = err == nil
		})
	}
	wg.Wait()
	anyUp := false
	for _, v := range ok {
		anyUp = anyUp || v
	}
	changed := false
	for i, m := range p.members {
		if m.setUp(ok[i], anyUp) {
			changed = true
			if ok[i] {
				log.Info("etcd member answers again", "endpoint", m.endpoint)
			} else {
				log.Warn("etcd member stopped answering; its requests go to the others", "endpoint", m.endpoint, "probe_timeout", timeout)
			}
		}
	}
	return changed
}
