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
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
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
	// DialTimeout bounds the first contact in New; 0 means 5 s.
	DialTimeout time.Duration
	// CompactInterval is how often history is compacted; 0 means 5 min and
	// a negative value turns compaction off.
	CompactInterval time.Duration
}

const (
	defaultDialTimeout     = 5 * time.Second
	defaultCompactInterval = 5 * time.Minute
)

// Store is a store.Store on etcd.
type Store struct {
	cli    *clientv3.Client
	prefix string

	closed    atomic.Bool
	closeMu   sync.Mutex // orders closed against watchers.Add
	closeOnce sync.Once
	stop      chan struct{} // closed by Close: the compactor stops
	bg        sync.WaitGroup
}

var _ store.Store = (*Store)(nil)

// New connects to etcd and checks that it answers.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd endpoints: none given")
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = defaultDialTimeout
	}
	tlsConfig, err := clientTLS(cfg)
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		TLS:         tlsConfig,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	s := &Store{cli: cli, prefix: cfg.Prefix, stop: make(chan struct{})}
	pingCtx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
	defer cancel()
	if _, err := s.CurrentRevision(pingCtx); err != nil {
		cli.Close()
		return nil, fmt.Errorf("etcd %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	if cfg.CompactInterval == 0 {
		cfg.CompactInterval = defaultCompactInterval
	}
	if cfg.CompactInterval > 0 {
		t := time.NewTicker(cfg.CompactInterval)
		s.bg.Go(func() {
			defer t.Stop()
			s.compactor(t.C)
		})
	}
	return s, nil
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
		err = s.cli.Close()
		s.bg.Wait()
	})
	return err
}

// Client returns the underlying etcd client.
func (s *Store) Client() *clientv3.Client { return s.cli }

// fail maps an etcd error to the store's errors.
func (s *Store) fail(err error, rev int64) error {
	switch {
	case s.closed.Load():
		return store.ErrClosed
	case errors.Is(err, rpctypes.ErrCompacted):
		return &store.RevisionError{Requested: rev, Err: store.ErrCompacted}
	case errors.Is(err, rpctypes.ErrFutureRev):
		return &store.RevisionError{Requested: rev, Err: store.ErrFutureRevision}
	}
	return err
}

func (s *Store) check(ctx context.Context, op, key string) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if op != "" {
		if err := store.CheckKey(op, key); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// CurrentRevision implements store.Store.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	if err := s.check(ctx, "", ""); err != nil {
		return 0, err
	}
	resp, err := s.cli.Get(ctx, s.prefix+"/", clientv3.WithCountOnly())
	if err != nil {
		return 0, s.fail(err, 0)
	}
	return resp.Header.Revision, nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.KV, error) {
	if err := s.check(ctx, "get", key); err != nil {
		return store.KV{}, err
	}
	resp, err := s.cli.Get(ctx, s.prefix+key)
	if err != nil {
		return store.KV{}, &store.KeyError{Op: "get", Key: key, Err: s.fail(err, 0)}
	}
	if len(resp.Kvs) == 0 {
		return store.KV{}, &store.KeyError{Op: "get", Key: key, Err: store.ErrNotFound}
	}
	return s.kv(resp.Kvs[0]), nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, prefix string, opts store.ListOptions) (store.ListResult, error) {
	if err := s.check(ctx, "", ""); err != nil {
		return store.ListResult{}, err
	}
	from, end := s.prefix+prefix, clientv3.GetPrefixRangeEnd(s.prefix+prefix)
	if from == "" {
		from, end = "\x00", "\x00" // every key
	}
	if opts.Continue != "" && opts.Continue >= prefix {
		from = s.prefix + opts.Continue + "\x00"
	}
	ops := []clientv3.OpOption{clientv3.WithRange(end)}
	if opts.Limit > 0 {
		ops = append(ops, clientv3.WithLimit(opts.Limit))
	}
	if opts.Revision > 0 {
		ops = append(ops, clientv3.WithRev(opts.Revision))
	}
	resp, err := s.cli.Get(ctx, from, ops...)
	if err != nil {
		return store.ListResult{}, s.fail(err, opts.Revision)
	}
	res := store.ListResult{KVs: make([]store.KV, len(resp.Kvs)), Revision: opts.Revision, More: resp.More}
	if resp.More && opts.Count {
		res.Remaining = resp.Count - int64(len(resp.Kvs)) // Count is every key in the range
	}
	if res.Revision == 0 {
		res.Revision = resp.Header.Revision
	}
	for i, kv := range resp.Kvs {
		res.KVs[i] = s.kv(kv)
	}
	return res, nil
}

// Create implements store.Store.
func (s *Store) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if err := s.check(ctx, "create", key); err != nil {
		return 0, err
	}
	k := s.prefix + key
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, string(value))).
		Commit()
	if err != nil {
		return 0, &store.KeyError{Op: "create", Key: key, Err: s.fail(err, 0)}
	}
	if !resp.Succeeded {
		return 0, &store.KeyError{Op: "create", Key: key, Err: store.ErrExists}
	}
	return resp.Header.Revision, nil
}

// guard is the comparison for a conditional write: the key exists and,
// unless expected is 0, was last written at expected.
func guard(k string, expected int64) clientv3.Cmp {
	if expected == 0 {
		return clientv3.Compare(clientv3.CreateRevision(k), ">", 0)
	}
	return clientv3.Compare(clientv3.ModRevision(k), "=", expected)
}

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, key string, value []byte, expectedModRevision int64) (int64, error) {
	if err := s.check(ctx, "update", key); err != nil {
		return 0, err
	}
	k := s.prefix + key
	resp, err := s.cli.Txn(ctx).
		If(guard(k, expectedModRevision)).
		Then(clientv3.OpPut(k, string(value))).
		Else(clientv3.OpGet(k, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return 0, &store.KeyError{Op: "update", Key: key, Err: s.fail(err, 0)}
	}
	if !resp.Succeeded {
		return 0, &store.KeyError{Op: "update", Key: key, Err: failedGuard(resp)}
	}
	return resp.Header.Revision, nil
}

var _ store.Expirer = (*Store)(nil)

// PutTTL implements store.Expirer with an etcd lease of its own for each
// put: the key leaves the lease it had, which then expires holding
// nothing, and etcd's leader deletes the key when the new one expires.
func (s *Store) PutTTL(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error) {
	if err := s.check(ctx, "put", key); err != nil {
		return 0, err
	}
	secs := max(int64((ttl+time.Second-1)/time.Second), 1)
	lease, err := s.cli.Grant(ctx, secs)
	if err != nil {
		return 0, &store.KeyError{Op: "put", Key: key, Err: s.fail(err, 0)}
	}
	resp, err := s.cli.Put(ctx, s.prefix+key, string(value), clientv3.WithLease(lease.ID))
	if err != nil {
		return 0, &store.KeyError{Op: "put", Key: key, Err: s.fail(err, 0)}
	}
	return resp.Header.Revision, nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, key string, expectedModRevision int64) (store.KV, int64, error) {
	if err := s.check(ctx, "delete", key); err != nil {
		return store.KV{}, 0, err
	}
	k := s.prefix + key
	resp, err := s.cli.Txn(ctx).
		If(guard(k, expectedModRevision)).
		Then(clientv3.OpDelete(k, clientv3.WithPrevKV())).
		Else(clientv3.OpGet(k, clientv3.WithCountOnly())).
		Commit()
	if err != nil {
		return store.KV{}, 0, &store.KeyError{Op: "delete", Key: key, Err: s.fail(err, 0)}
	}
	if !resp.Succeeded {
		return store.KV{}, 0, &store.KeyError{Op: "delete", Key: key, Err: failedGuard(resp)}
	}
	prev := resp.Responses[0].GetResponseDeleteRange().PrevKvs
	if len(prev) == 0 {
		// The guard held, so the key existed; a server that does not
		// honour WithPrevKV would get here.
		return store.KV{}, 0, &store.KeyError{Op: "delete", Key: key, Err: errors.New("etcd returned no previous value")}
	}
	return s.kv(prev[0]), resp.Header.Revision, nil
}

// failedGuard says why a guard failed, from the Else count.
func failedGuard(resp *clientv3.TxnResponse) error {
	if resp.Responses[0].GetResponseRange().Count == 0 {
		return store.ErrNotFound
	}
	return store.ErrConflict
}

// Compact implements store.Store.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	if err := s.check(ctx, "", ""); err != nil {
		return err
	}
	_, err := s.cli.Compact(ctx, rev)
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil // at or below an earlier compaction
	}
	if err != nil {
		return s.fail(err, rev)
	}
	return nil
}
