// Package etcd is a store.Store on an etcd v3 cluster, for API servers that
// share state or need more than one machine.
//
// Every write is one etcd transaction: Create compares CreateRevision with 0,
// Update and Delete compare ModRevision with the expected one. Revisions are
// etcd's own, so resourceVersion means exactly what it means in Kubernetes.
// Lists read with WithRev, watches start WithRev(from+1) WithPrevKV, and
// etcd's "required revision has been compacted" becomes store.ErrCompacted.
//
// The store compacts etcd as kube-apiserver does: every
// Config.CompactInterval it compacts to the revision it saw one interval
// earlier, so at least one interval of history is kept.
package etcd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kubegate/kubegate/store"
)

// Config says how to reach etcd.
type Config struct {
	// Endpoints are the client URLs, such as https://127.0.0.1:2379.
	Endpoints []string
	// CAFile verifies the servers' certificates (DIR/pki/etcd/ca.crt
	// from kubegate pki init); empty means the system roots. Setting it,
	// or CertFile and KeyFile, turns TLS on.
	CAFile string
	// CertFile and KeyFile are the client certificate and key presented to
	// etcd for mTLS (DIR/pki/apiserver-etcd-client.crt and .key); both
	// empty means none.
	CertFile, KeyFile string
	// Prefix is prepended to every key, so several users can share one
	// etcd; empty means none. Listing or watching the empty prefix also
	// reaches keys of another Prefix that starts with this one, so give
	// sharing users prefixes such as "/a/" and "/b/".
	Prefix string
	// DialTimeout bounds each connection attempt and the first contact in
	// New; 0 means 20 s, kube-apiserver's.
	DialTimeout time.Duration
	// KeepAliveTime is how long a connection may stay silent before the
	// client pings the member, and KeepAliveTimeout how long it waits for
	// the answer before closing the connection; 0 means 30 s and 10 s,
	// kube-apiserver's.
	KeepAliveTime, KeepAliveTimeout time.Duration
	// CompactInterval is how often history is compacted; 0 means 5 min and
	// a negative value turns compaction off (--etcd-compaction-interval,
	// where 0 turns it off).
	CompactInterval time.Duration
	// ProbeInterval is how often each member is probed on its own, and
	// ProbeTimeout how long a probe may take before its member counts as
	// not answering (J.4); 0 means 500 ms each, a negative ProbeInterval
	// turns probing off.
	ProbeInterval, ProbeTimeout time.Duration
	// Logger receives the members' state changes; nil means slog.Default().
	Logger *slog.Logger
}

const (
	defaultDialTimeout      = 20 * time.Second
	defaultKeepAliveTime    = 30 * time.Second
	defaultKeepAliveTimeout = 10 * time.Second
	defaultCompactInterval  = 5 * time.Minute
	defaultProbeInterval    = 500 * time.Millisecond
	defaultProbeTimeout     = 500 * time.Millisecond
)

// Store is a store.Store on etcd.
type Store struct {
	// cli reaches every member that answers, balanced by the etcd client;
	// watches and compaction use it.
	cli *clientv3.Client
	// pool holds one client per member, on which the store sends reads and
	// writes itself, so that it can abandon a request whose member stopped
	// answering and send it to another (J.4).
	pool   *pool
	prefix string
	// rev is the highest revision any answer has carried: a write sent
	// afterwards can only commit above it.
	rev atomic.Int64

	closed    atomic.Bool
	closeMu   sync.Mutex // orders closed against watchers.Add
	closeOnce sync.Once
	stop      chan struct{} // closed by Close: the compactor and the prober stop
	bg        sync.WaitGroup
}

var _ store.Store = (*Store)(nil)

// New connects to etcd and checks that it answers.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd endpoints: none given")
	}
	cfg = withDefaults(cfg)
	tlsConfig, err := clientTLS(cfg)
	if err != nil {
		return nil, err
	}
	newClient := func(endpoints ...string) (*clientv3.Client, error) {
		return clientv3.New(clientv3.Config{
			Endpoints:            endpoints,
			DialTimeout:          cfg.DialTimeout,
			DialKeepAliveTime:    cfg.KeepAliveTime,
			DialKeepAliveTimeout: cfg.KeepAliveTimeout,
			TLS:                  tlsConfig,
			Logger:               zap.NewNop(),
		})
	}
	s := &Store{prefix: cfg.Prefix, stop: make(chan struct{}), pool: &pool{}}
	fail := func(err error) (*Store, error) {
		s.closeClients()
		return nil, fmt.Errorf("etcd %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	if s.cli, err = newClient(cfg.Endpoints...); err != nil {
		return fail(err)
	}
	for _, ep := range cfg.Endpoints {
		c, err := newClient(ep)
		if err != nil {
			return fail(err)
		}
		s.pool.members = append(s.pool.members, &member{endpoint: ep, cli: c, up: true, inFlight: map[*context.CancelCauseFunc]struct{}{}})
	}
	pingCtx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	if _, err := s.CurrentRevision(pingCtx); err != nil {
		return fail(err)
	}
	if cfg.CompactInterval > 0 {
		t := time.NewTicker(cfg.CompactInterval)
		s.bg.Go(func() {
			defer t.Stop()
			s.compactor(t.C)
		})
	}
	if cfg.ProbeInterval > 0 && len(s.pool.members) > 1 {
		t := time.NewTicker(cfg.ProbeInterval)
		s.bg.Go(func() {
			defer t.Stop()
			s.prober(t.C, cfg.ProbeTimeout, cfg.Logger)
		})
	}
	return s, nil
}

func withDefaults(cfg Config) Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.DialTimeout, defaultDialTimeout)
	def(&cfg.KeepAliveTime, defaultKeepAliveTime)
	def(&cfg.KeepAliveTimeout, defaultKeepAliveTimeout)
	def(&cfg.CompactInterval, defaultCompactInterval)
	def(&cfg.ProbeInterval, defaultProbeInterval)
	def(&cfg.ProbeTimeout, defaultProbeTimeout)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return cfg
}

// prober probes the members on every tick and gives the balanced client
// only those that answer.
func (s *Store) prober(tick <-chan time.Time, timeout time.Duration, log *slog.Logger) {
	key := s.prefix + "/health"
	for {
		select {
		case <-s.stop:
			return
		case <-tick:
		}
		if s.pool.probe(key, timeout, log) {
			s.cli.SetEndpoints(s.pool.upEndpoints()...)
		}
	}
}

func clientTLS(cfg Config) (*tls.Config, error) {
	if cfg.CAFile == "" && cfg.CertFile == "" && cfg.KeyFile == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read etcd CA file: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("read etcd CA file %q: no PEM certificates found", cfg.CAFile)
		}
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, fmt.Errorf("etcd client certificate %q and key %q: give both or neither", cfg.CertFile, cfg.KeyFile)
	}
	if cfg.CertFile != "" {
		pair, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load etcd client certificate %q: %w", cfg.CertFile, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// compactor compacts, on every tick, to the revision seen at the previous
// tick.
func (s *Store) compactor(tick <-chan time.Time) {
	var last int64
	for {
		select {
		case <-s.stop:
			return
		case <-tick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if last > 0 {
			// A failure (etcd unreachable) is retried at the next tick.
			_ = s.Compact(ctx, last)
		}
		if rev, err := s.CurrentRevision(ctx); err == nil {
			last = rev
		}
		cancel()
	}
}

// Close stops the compactor, ends the watches with store.ErrClosed and
// closes the client.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.closeMu.Lock()
		s.closed.Store(true)
		s.closeMu.Unlock()
		close(s.stop)
		err = s.closeClients()
		s.bg.Wait()
	})
	return err
}

func (s *Store) closeClients() error {
	var errs []error
	if s.cli != nil {
		errs = append(errs, s.cli.Close())
	}
	for _, m := range s.pool.members {
		errs = append(errs, m.cli.Close())
	}
	return errors.Join(errs...)
}

// Client returns the underlying etcd client.
func (s *Store) Client() *clientv3.Client { return s.cli }
