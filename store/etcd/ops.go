package etcd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kubegate/kubegate/store"
)

// fail maps an etcd error to the store's errors: the request's own end as
// it is, etcd's refusals of a revision as store errors, and every other
// failure as a *store.UnavailableError whose Reason names no key and no
// address (J.4).
func (s *Store) fail(ctx context.Context, err error, rev int64) error {
	switch {
	case s.closed.Load():
		return store.ErrClosed
	case errors.Is(err, rpctypes.ErrCompacted):
		return &store.RevisionError{Requested: rev, Err: store.ErrCompacted}
	case errors.Is(err, rpctypes.ErrFutureRev):
		return &store.RevisionError{Requested: rev, Err: store.ErrFutureRevision}
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return unavailable(err)
}

// unavailable wraps a failure of etcd. Its reason is etcd's own message
// ("etcdserver: request timed out") when etcd answered one; a failure to
// reach etcd at all gives the message of a request that ran out of time,
// as the etcd client waits for a connection until then.
func unavailable(err error) error {
	reason := context.DeadlineExceeded.Error()
	var ee rpctypes.EtcdError
	if errors.As(rpctypes.Error(err), &ee) {
		reason = ee.Error()
	}
	return &store.UnavailableError{Reason: reason, Err: err}
}

// maybeApplied is the error of a write sent more than once whose outcome
// the store cannot tell.
func maybeApplied(cause error) error {
	return fmt.Errorf("%w (%v)", store.ErrMaybeApplied, cause)
}

// observe records a revision an answer carried.
func (s *Store) observe(rev int64) {
	for {
		cur := s.rev.Load()
		if rev <= cur || s.rev.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// abandoned reports whether an attempt ended because its member stopped
// answering, or its connection to the member failed, while the request
// itself could go on; etcd's own refusals ("etcdserver: no leader") are
// answers, not abandonment.
func abandoned(ctx, attempt context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if errors.Is(context.Cause(attempt), errMemberDown) {
		return true
	}
	var ee rpctypes.EtcdError
	return status.Code(err) == codes.Unavailable && !errors.As(rpctypes.Error(err), &ee)
}

// read runs f on a member, and again on another when the member stops
// answering before f returns: reads can be repeated.
func (s *Store) read(ctx context.Context, f func(context.Context, *clientv3.Client) error) error {
	var tried []*member
	for {
		m := s.pool.pick(tried)
		if m == nil {
			return errMemberDown
		}
		actx, end := m.begin(ctx)
		err := f(actx, m.cli)
		gone := abandoned(ctx, actx, err)
		end()
		if !gone {
			return err
		}
		tried = append(tried, m)
	}
}

// txn sends a write transaction to a member. When the member stops
// answering before the answer, the write may or may not have been
// applied; with retry it is sent to another member, which is safe as every
// transaction of the store compares a revision, so that it cannot apply
// twice. resent reports that an earlier attempt may have committed.
func (s *Store) txn(ctx context.Context, retry bool, f func(context.Context, *clientv3.Client) (*clientv3.TxnResponse, error)) (_ *clientv3.TxnResponse, resent bool, _ error) {
	var tried []*member
	for {
		m := s.pool.pick(tried)
		if m == nil {
			return nil, len(tried) > 0, errMemberDown
		}
		actx, end := m.begin(ctx)
		resp, err := f(actx, m.cli)
		gone := abandoned(ctx, actx, err)
		end()
		if !gone {
			if err == nil {
				s.observe(resp.Header.Revision)
			}
			return resp, len(tried) > 0, err
		}
		tried = append(tried, m)
		if !retry {
			return nil, true, err
		}
	}
}

// getKV reads key (with the prefix) at rev (0: the current revision); nil
// when it does not exist.
func (s *Store) getKV(ctx context.Context, k string, rev int64) (*mvccpb.KeyValue, error) {
	var resp *clientv3.GetResponse
	err := s.read(ctx, func(ctx context.Context, c *clientv3.Client) (err error) {
		resp, err = c.Get(ctx, k, clientv3.WithRev(rev))
		return err
	})
	if err != nil {
		return nil, err
	}
	s.observe(resp.Header.Revision)
	if len(resp.Kvs) == 0 {
		return nil, nil
	}
	return resp.Kvs[0], nil
}

// CurrentRevision implements store.Store.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	if err := s.check(ctx, "", ""); err != nil {
		return 0, err
	}
	var resp *clientv3.GetResponse
	err := s.read(ctx, func(ctx context.Context, c *clientv3.Client) (err error) {
		resp, err = c.Get(ctx, s.prefix+"/", clientv3.WithCountOnly())
		return err
	})
	if err != nil {
		return 0, s.fail(ctx, err, 0)
	}
	s.observe(resp.Header.Revision)
	return resp.Header.Revision, nil
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

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, key string) (store.KV, error) {
	if err := s.check(ctx, "get", key); err != nil {
		return store.KV{}, err
	}
	kv, err := s.getKV(ctx, s.prefix+key, 0)
	if err != nil {
		return store.KV{}, &store.KeyError{Op: "get", Key: key, Err: s.fail(ctx, err, 0)}
	}
	if kv == nil {
		return store.KV{}, &store.KeyError{Op: "get", Key: key, Err: store.ErrNotFound}
	}
	return s.kv(kv), nil
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
	var resp *clientv3.GetResponse
	err := s.read(ctx, func(ctx context.Context, c *clientv3.Client) (err error) {
		resp, err = c.Get(ctx, from, ops...)
		return err
	})
	if err != nil {
		return store.ListResult{}, s.fail(ctx, err, opts.Revision)
	}
	s.observe(resp.Header.Revision)
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
	before := s.rev.Load()
	resp, resent, err := s.txn(ctx, true, func(ctx context.Context, c *clientv3.Client) (*clientv3.TxnResponse, error) {
		return c.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, string(value))).
			Commit()
	})
	return s.outcome(ctx, "create", key, resp, resent, err,
		func() (int64, error) { return s.settleCreate(ctx, k, value, before) },
		func() error { return store.ErrExists })
}

// outcome is the answer to a conditional put: the failure of its last
// attempt, told may-have-been-applied when it was resent; the new
// revision; the settled outcome of a resent one whose compare failed; or
// refused, when the compare failed on the only attempt.
func (s *Store) outcome(ctx context.Context, op, key string, resp *clientv3.TxnResponse, resent bool, err error,
	settle func() (int64, error), refused func() error) (int64, error) {
	var rev int64
	switch {
	case err != nil && resent:
		err = s.unsure(ctx, err)
	case err != nil:
		err = s.fail(ctx, err, 0)
	case resp.Succeeded:
		return resp.Header.Revision, nil
	case resent:
		rev, err = settle()
	default:
		err = refused()
	}
	if err != nil {
		return 0, &store.KeyError{Op: op, Key: key, Err: err}
	}
	return rev, nil
}

// unsure is the error of a write resent after its member stopped
// answering, when the last attempt failed too.
func (s *Store) unsure(ctx context.Context, err error) error {
	if ctx.Err() != nil || s.closed.Load() {
		return s.fail(ctx, err, 0)
	}
	return maybeApplied(err)
}

// settleCreate tells, after a resent create found the key there, whether
// the key is the one the first attempt created: the key was created after
// the store last saw revision before, and with exactly this value (which,
// for the API server's objects, carries a new UID and timestamps). A key
// created at or before before is another writer's: ErrExists. Anything
// else cannot be told: store.ErrMaybeApplied.
func (s *Store) settleCreate(ctx context.Context, k string, value []byte, before int64) (int64, error) {
	kv, err := s.getKV(ctx, k, 0)
	switch {
	case err != nil:
		return 0, s.unsure(ctx, err)
	case kv == nil:
		return 0, maybeApplied(errors.New("the key is gone"))
	case kv.CreateRevision <= before:
		return 0, store.ErrExists
	}
	created := kv
	if kv.ModRevision != kv.CreateRevision {
		if created, err = s.getKV(ctx, k, kv.CreateRevision); err != nil || created == nil {
			return 0, maybeApplied(fmt.Errorf("read the key as it was created: %v", err))
		}
	}
	if !bytes.Equal(created.Value, value) {
		return 0, maybeApplied(errors.New("the key was created with another value"))
	}
	return kv.CreateRevision, nil
}

// guard is the comparison for a conditional write: the key exists and,
// unless expected is 0, was last written at expected.
func guard(k string, expected int64) clientv3.Cmp {
	if expected == 0 {
		return clientv3.Compare(clientv3.CreateRevision(k), ">", 0)
	}
	return clientv3.Compare(clientv3.ModRevision(k), "=", expected)
}

// Update implements store.Store. An update with expectedModRevision 0 is
// not resent, as nothing would keep it from applying twice.
func (s *Store) Update(ctx context.Context, key string, value []byte, expectedModRevision int64) (int64, error) {
	if err := s.check(ctx, "update", key); err != nil {
		return 0, err
	}
	k := s.prefix + key
	before := s.rev.Load()
	resp, resent, err := s.txn(ctx, expectedModRevision != 0, func(ctx context.Context, c *clientv3.Client) (*clientv3.TxnResponse, error) {
		return c.Txn(ctx).
			If(guard(k, expectedModRevision)).
			Then(clientv3.OpPut(k, string(value))).
			Else(clientv3.OpGet(k, clientv3.WithCountOnly())).
			Commit()
	})
	return s.outcome(ctx, "update", key, resp, resent, err,
		func() (int64, error) { return s.settleUpdate(ctx, k, value, before) },
		func() error { return failedGuard(resp) })
}

// settleUpdate tells, after a resent update found the key changed, whether
// the change is the first attempt's: the key holds exactly this value,
// written after the store last saw revision before. A key last written at
// or before before has not changed since the update was sent, so the
// expected revision was stale: ErrConflict. Anything else cannot be told.
func (s *Store) settleUpdate(ctx context.Context, k string, value []byte, before int64) (int64, error) {
	kv, err := s.getKV(ctx, k, 0)
	switch {
	case err != nil:
		return 0, s.unsure(ctx, err)
	case kv == nil:
		return 0, maybeApplied(errors.New("the key is gone"))
	case kv.ModRevision <= before:
		return 0, store.ErrConflict
	case bytes.Equal(kv.Value, value):
		return kv.ModRevision, nil
	}
	return 0, maybeApplied(errors.New("the key was written since"))
}

// Delete implements store.Store. A delete with expectedModRevision 0 is
// not resent, as its outcome could not be told.
func (s *Store) Delete(ctx context.Context, key string, expectedModRevision int64) (store.KV, int64, error) {
	if err := s.check(ctx, "delete", key); err != nil {
		return store.KV{}, 0, err
	}
	k := s.prefix + key
	before := s.rev.Load()
	resp, resent, err := s.txn(ctx, expectedModRevision != 0, func(ctx context.Context, c *clientv3.Client) (*clientv3.TxnResponse, error) {
		return c.Txn(ctx).
			If(guard(k, expectedModRevision)).
			Then(clientv3.OpDelete(k, clientv3.WithPrevKV())).
			Else(clientv3.OpGet(k, clientv3.WithCountOnly())).
			Commit()
	})
	switch {
	case err != nil && resent:
		return store.KV{}, 0, &store.KeyError{Op: "delete", Key: key, Err: s.unsure(ctx, err)}
	case err != nil:
		return store.KV{}, 0, &store.KeyError{Op: "delete", Key: key, Err: s.fail(ctx, err, 0)}
	case !resp.Succeeded && resent:
		return store.KV{}, 0, &store.KeyError{Op: "delete", Key: key, Err: s.settleDelete(ctx, k, before)}
	case !resp.Succeeded:
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

// settleDelete says why a resent delete failed. A key that still exists,
// created at or before revision before, is the object the delete was
// sent for, changed by another writer: ErrConflict. A key that is gone may
// have been deleted by the first attempt or by another writer; a delete
// carries nothing to tell them apart: store.ErrMaybeApplied.
func (s *Store) settleDelete(ctx context.Context, k string, before int64) error {
	kv, err := s.getKV(ctx, k, 0)
	switch {
	case err != nil:
		return s.unsure(ctx, err)
	case kv != nil && kv.CreateRevision <= before:
		return store.ErrConflict
	case kv == nil:
		return maybeApplied(errors.New("the key is gone"))
	}
	return maybeApplied(errors.New("the key was created again"))
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
		return s.fail(ctx, err, rev)
	}
	return nil
}

var _ store.Expirer = (*Store)(nil)

// PutTTL implements store.Expirer with an etcd lease of its own for each
// put: the key leaves the lease it had, which then expires holding
// nothing, and etcd's leader deletes the key when the new one expires.
// Both steps can be repeated on another member: a second grant leaves an
// unused lease to expire, and a second put writes the same value.
func (s *Store) PutTTL(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error) {
	if err := s.check(ctx, "put", key); err != nil {
		return 0, err
	}
	secs := max(int64((ttl+time.Second-1)/time.Second), 1)
	var rev int64
	err := s.read(ctx, func(ctx context.Context, c *clientv3.Client) error {
		lease, err := c.Grant(ctx, secs)
		if err != nil {
			return err
		}
		resp, err := c.Put(ctx, s.prefix+key, string(value), clientv3.WithLease(lease.ID))
		if err != nil {
			return err
		}
		rev = resp.Header.Revision
		return nil
	})
	if err != nil {
		return 0, &store.KeyError{Op: "put", Key: key, Err: s.fail(ctx, err, 0)}
	}
	s.observe(rev)
	return rev, nil
}
