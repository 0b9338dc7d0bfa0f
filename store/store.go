// Package store defines the object store under the API server: a sorted
// key-value map with one revision counter, compare-and-swap writes, consistent
// lists at a revision, watches that resume from a revision, and compaction of
// old history.
//
// # Revisions
//
// Every successful write (create, update or delete) moves the store to a new
// revision, an int64 that only ever increases and is never 0; it is what
// Kubernetes calls resourceVersion. A KV records the revision that created it
// and the revision of its latest write. Revisions need not be contiguous for
// one key prefix (other prefixes, or other users of a shared etcd, take
// revisions too), so callers compare them for order and equality only.
//
// # History and compaction
//
// A store keeps the events of recent revisions so that lists can be served at
// a past revision and watches can resume. Compact(rev) discards history before
// rev: afterwards a List at a revision below rev, and a Watch from a revision
// below rev-1 (which needs the events from rev-1+1 on), fail with an error
// matching ErrCompacted. The API server answers those with 410 Gone ("too old
// resource version"), and clients re-list.
//
// # Values
//
// Values are opaque bytes. Slices returned by a store, in KVs and events, are
// shared with other readers and must not be modified.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Store is the storage boundary of the API server. Implementations are safe
// for concurrent use. Keys are non-empty strings such as "/pods/default/app";
// a prefix selects every key that starts with it, so callers end prefixes
// with "/" to keep "/pods/a/" from matching "/pods/ab/".
//
// A write whose context is cancelled after it was sent may still be applied;
// the caller learns the outcome by reading the key again.
type Store interface {
	// Get returns the current value of key, or an error matching ErrNotFound.
	Get(ctx context.Context, key string) (KV, error)

	// List returns the keys under prefix in key order, as they were at
	// opts.Revision (0: the current revision).
	List(ctx context.Context, prefix string, opts ListOptions) (ListResult, error)

	// Create stores value under key if the key does not exist, and returns
	// the new revision. An existing key gives ErrExists.
	Create(ctx context.Context, key string, value []byte) (int64, error)

	// Update replaces the value of key if its ModRevision equals
	// expectedModRevision (0: whatever it is), and returns the new revision.
	// A missing key gives ErrNotFound and a different ModRevision ErrConflict.
	Update(ctx context.Context, key string, value []byte, expectedModRevision int64) (int64, error)

	// Delete removes key if its ModRevision equals expectedModRevision
	// (0: whatever it is). It returns the deleted KV and the new revision.
	// A missing key gives ErrNotFound and a different ModRevision ErrConflict.
	Delete(ctx context.Context, key string, expectedModRevision int64) (KV, int64, error)

	// Watch streams the events under prefix with revisions above
	// fromRevision, in revision order (0: from the current revision, so only
	// writes that happen after Watch returns). A fromRevision whose events
	// are compacted gives an error matching ErrCompacted, from Watch or, if
	// compaction happens while the watch catches up, from Watcher.Err. The
	// watch ends when ctx is done, Stop is called or the store closes.
	Watch(ctx context.Context, prefix string, fromRevision int64) (Watcher, error)

	// Compact discards the history before revision rev (see the package
	// doc). Compacting to a revision at or below an earlier compaction does
	// nothing; a revision above the current one gives ErrFutureRevision.
	Compact(ctx context.Context, rev int64) error

	// CurrentRevision returns the revision of the latest write.
	CurrentRevision(ctx context.Context) (int64, error)

	// Close releases the store. Later calls fail with ErrClosed, open
	// watches end with ErrClosed. Close may be called more than once.
	Close() error
}

// Expirer is implemented by a store that can keep a key for a limited
// time, as the API servers sharing one store keep their leases of the
// kubernetes Service's endpoints (docs/kubernetes-behaviour.md J.3). etcd
// implements it with a lease, which its own leader times, so that no
// wall clock of another machine is trusted. A store only one server opens
// (bbolt) need not implement it.
type Expirer interface {
	// PutTTL creates or replaces key with value, and deletes it once ttl
	// (rounded up to a whole second, and raised to the store's shortest)
	// has passed without another PutTTL of the key; watches see the
	// deletion as a Deleted event. It returns the new revision.
	PutTTL(ctx context.Context, key string, value []byte, ttl time.Duration) (int64, error)
}

// KV is one stored key and value.
type KV struct {
	Key   string
	Value []byte
	// CreateRevision is the revision that created the key.
	CreateRevision int64
	// ModRevision is the revision of the key's latest write; it is the
	// object's resourceVersion.
	ModRevision int64
}

// ListOptions select a page of a list. The zero value lists everything at the
// current revision.
type ListOptions struct {
	// Revision to read at; 0 means the current revision. Pass the Revision
	// of the first page when reading the following ones, so every page comes
	// from the same snapshot.
	Revision int64
	// Limit is the most KVs to return; 0 means no limit.
	Limit int64
	// Continue lists only keys after this one, normally the last key of the
	// previous page; "" starts at the beginning of the prefix.
	Continue string
	// Count asks for ListResult.Remaining, which costs a walk over the
	// keys after the page.
	Count bool
}

// ListResult is one page of a list.
type ListResult struct {
	KVs []KV
	// Revision is the revision the list was read at.
	Revision int64
	// More reports that keys after the last returned one remain.
	More bool
	// Remaining counts those keys, at Revision, when ListOptions.Count asked
	// for it; 0 when there are none.
	Remaining int64
}

// EventType says what happened to a key.
type EventType int

// The event types. Their String values are the Kubernetes watch event types.
const (
	// Added: the key was created.
	Added EventType = iota + 1
	// Modified: the key's value was replaced.
	Modified
	// Deleted: the key was removed.
	Deleted
	// Progress carries no key. It reports that every event up to
	// Event.Revision has been delivered; the API server sends it as a
	// BOOKMARK.
	Progress
)

func (t EventType) String() string {
	switch t {
	case Added:
		return "ADDED"
	case Modified:
		return "MODIFIED"
	case Deleted:
		return "DELETED"
	case Progress:
		return "PROGRESS"
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is one change seen by a watch.
type Event struct {
	Type EventType
	// Revision of the change, or for Progress the revision up to which
	// every event has been delivered.
	Revision int64
	// KV is the key after the change. For Deleted it holds the last value
	// and CreateRevision, with ModRevision set to the revision of the
	// delete, as Kubernetes reports deleted objects.
	KV KV
	// Prev is the key before the change, for Modified and Deleted; nil for
	// Added and Progress, or if the store no longer has it.
	Prev *KV
}

// Watcher is a running watch.
type Watcher interface {
	// ResultChan delivers the events in revision order. It is closed when
	// the watch ends; Err then says why.
	ResultChan() <-chan Event
	// Err returns why the watch ended: nil after Stop, the context's error,
	// ErrClosed, or an error matching ErrCompacted. It is only meaningful
	// after ResultChan is closed.
	Err() error
	// RequestProgress asks for a Progress event once every event up to the
	// store's current revision has been delivered. It is best effort: the
	// request may be dropped, and clients must not rely on the answer.
	RequestProgress()
	// Stop ends the watch and releases its resources. It may be called
	// more than once.
	Stop()
}

// The errors a Store returns. Implementations wrap them with the key or
// revision concerned; test with errors.Is.
var (
	// ErrNotFound: the key does not exist (404).
	ErrNotFound = errors.New("key not found")
	// ErrExists: Create found the key already there (409 AlreadyExists).
	ErrExists = errors.New("key already exists")
	// ErrConflict: the key's ModRevision differs from the expected one
	// (409 Conflict).
	ErrConflict = errors.New("key was modified since the expected revision")
	// ErrCompacted: the requested revision is older than the kept history
	// ("too old resource version", 410 Gone). The error is a
	// *RevisionError when the store knows the oldest kept revision.
	ErrCompacted = errors.New("revision has been compacted")
	// ErrFutureRevision: the requested revision is above the current one
	// ("too large resource version").
	ErrFutureRevision = errors.New("revision is in the future")
	// ErrInvalidKey: the key is empty.
	ErrInvalidKey = errors.New("invalid key")
	// ErrClosed: the store has been closed.
	ErrClosed = errors.New("store is closed")
	// ErrUnavailable: the store's backend failed to serve the request (etcd
	// unreachable, without quorum, or timed out). The error is an
	// *UnavailableError, whose Reason is what a client may be told.
	ErrUnavailable = errors.New("storage unavailable")
	// ErrMaybeApplied: a write was sent, its answer was lost, and the store
	// cannot tell whether it was applied; the caller learns the outcome by
	// reading the key again. It is never a false ErrConflict or ErrExists.
	ErrMaybeApplied = errors.New("the write may have been applied")
)

// UnavailableError is a backend failure. Reason names the fault without a
// key, an address or any other detail of the backend, as a client may read
// it; Err keeps the detail for the server's log.
type UnavailableError struct {
	Reason string
	Err    error
}

func (e *UnavailableError) Error() string {
	if e.Err == nil || e.Err.Error() == e.Reason {
		return e.Reason
	}
	return e.Reason + ": " + e.Err.Error()
}

// Is makes an UnavailableError match ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

func (e *UnavailableError) Unwrap() error { return e.Err }

// RevisionError reports a revision outside the range the store can serve.
// Err is ErrCompacted or ErrFutureRevision.
type RevisionError struct {
	// Requested is the revision asked for.
	Requested int64
	// Bound is, for ErrCompacted, the oldest revision still served, and for
	// ErrFutureRevision the current revision; 0 when unknown.
	Bound int64
	Err   error
}

func (e *RevisionError) Error() string {
	switch {
	case e.Bound == 0:
		return fmt.Sprintf("revision %d: %v", e.Requested, e.Err)
	case errors.Is(e.Err, ErrCompacted):
		return fmt.Sprintf("revision %d: %v (oldest available %d)", e.Requested, e.Err, e.Bound)
	default:
		return fmt.Sprintf("revision %d: %v (current %d)", e.Requested, e.Err, e.Bound)
	}
}

func (e *RevisionError) Unwrap() error { return e.Err }

// KeyError reports a failed operation on one key; Err is one of the sentinel
// errors above or an I/O error.
type KeyError struct {
	Op  string // "get", "create", "update" or "delete"
	Key string
	Err error
}

func (e *KeyError) Error() string { return fmt.Sprintf("%s %q: %v", e.Op, e.Key, e.Err) }

func (e *KeyError) Unwrap() error { return e.Err }

// CheckKey returns ErrInvalidKey, wrapped in a KeyError for op, if key is
// empty.
func CheckKey(op, key string) error {
	if key == "" {
		return &KeyError{Op: op, Key: key, Err: ErrInvalidKey}
	}
	return nil
}
