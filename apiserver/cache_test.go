package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/store"
	"github.com/kubegate/kubegate/store/bolt"
)

// flakyStore ends its next watch at once and fails its next list, when
// told to, as an etcd leader change followed by a timeout does.
type flakyStore struct {
	store.Store
	breakWatch atomic.Bool
	failLists  atomic.Int32
}

type endedWatch struct{ ch chan store.Event }

func (w endedWatch) ResultChan() <-chan store.Event { return w.ch }
func (w endedWatch) Err() error                     { return errors.New("leader changed") }
func (w endedWatch) RequestProgress()               {}
func (w endedWatch) Stop()                          {}

func (f *flakyStore) Watch(ctx context.Context, prefix string, rev int64) (store.Watcher, error) {
	if f.breakWatch.CompareAndSwap(true, false) {
		ch := make(chan store.Event)
		close(ch)
		return endedWatch{ch}, nil
	}
	return f.Store.Watch(ctx, prefix, rev)
}

func (f *flakyStore) List(ctx context.Context, prefix string, o store.ListOptions) (store.ListResult, error) {
	if f.failLists.Add(-1) >= 0 {
		return store.ListResult{}, errors.New("request timed out")
	}
	return f.Store.List(ctx, prefix, o)
}

// A write made while the cache's watch is down and its lists fail reaches
// the cache once a list succeeds: Pod Security reads namespace labels from
// it (D.8).
func TestWatchCacheRelistsUntilItCan_D8(t *testing.T) {
	t.Parallel()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	put := func(labels map[string]string) {
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: labels}}
		data, _ := json.Marshal(ns)
		key := Key(namespacesGVR, "", "team")
		if labels == nil {
			_, err = st.Create(ctx, key, data)
		} else {
			_, err = st.Update(ctx, key, data, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	put(nil)
	// The cache's first watch ends at once; the write lands while it is
	// down, and the first two lists after it fail.
	fs := &flakyStore{Store: st}
	fs.breakWatch.Store(true)
	c, err := startWatchCache(ctx, store.Store(fs), namespacesGVR, false, func() *corev1.Namespace { return &corev1.Namespace{} }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	fs.failLists.Store(2)
	put(map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	testwait.For(t, 10*time.Second, "the label in the cache", func() (bool, string) {
		ns, _ := c.get("", "team")
		if ns == nil {
			return false, "no namespace"
		}
		return ns.Labels["pod-security.kubernetes.io/enforce"] == "restricted", fmt.Sprint(ns.Labels)
	})
}
