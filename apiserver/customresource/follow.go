package customresource

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/store"
)

// crdsGVR is where CustomResourceDefinitions are stored.
var crdsGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// Installer is what Follow installs resources in: an apiserver.Server.
type Installer interface {
	SetResources(owner string, rs []*apiserver.Resource) error
}

var _ Installer = (*apiserver.Server)(nil)

// Follow serves the custom resources of the CustomResourceDefinitions in
// st through srv until ctx ends: once a definition's Established
// condition is True, its served versions are installed, again when it
// changes, and removed when it is deleted or is established no more.
// It returns once the definitions stored now are installed; done is
// closed when it stops. The objects of a definition with conversion
// Webhook are converted by conv's converter (nil: NewConverters(nil,
// nil)).
func Follow(ctx context.Context, st store.Store, srv Installer, conv Converters, log *slog.Logger) (done <-chan struct{}, err error) {
	f := &follower{st: st, srv: srv, conv: conv, log: log, prefix: apiserver.Key(crdsGVR, "", ""), installed: map[string]bool{}}
	rev, err := f.load(ctx)
	if err != nil {
		return nil, err
	}
	ch := make(chan struct{})
	go f.follow(ctx, rev, ch)
	return ch, nil
}

type follower struct {
	st     store.Store
	srv    Installer
	conv   Converters
	log    *slog.Logger
	prefix string
	// installed holds the definitions whose resources are installed.
	installed map[string]bool
}

// load installs every stored definition and removes what is installed
// of those no longer stored; it returns the revision it read at.
func (f *follower) load(ctx context.Context) (int64, error) {
	seen := map[string]bool{}
	opts := store.ListOptions{}
	for {
		page, err := f.st.List(ctx, f.prefix, opts)
		if err != nil {
			return 0, err
		}
		for _, kv := range page.KVs {
			seen[f.name(kv.Key)] = true
			f.apply(kv)
		}
		if !page.More || len(page.KVs) == 0 {
			for name := range f.installed {
				if !seen[name] {
					f.remove(name)
				}
			}
			return page.Revision, nil
		}
		opts.Revision, opts.Continue = page.Revision, page.KVs[len(page.KVs)-1].Key
	}
}

func (f *follower) name(key string) string { return strings.TrimPrefix(key, f.prefix) }

// apply installs, replaces or removes the resources of the stored
// definition kv.
func (f *follower) apply(kv store.KV) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := apiserver.UnmarshalStored(kv.Value, &crd); err != nil {
		f.log.Warn("custom resources: undecodable definition left out", "key", kv.Key, "err", err)
		return
	}
	if !apihelpers.IsCRDConditionTrue(&crd, apiextensionsv1.Established) {
		f.remove(crd.Name)
		return
	}
	rs, err := ResourcesConverting(&crd, f.conv)
	if err == nil {
		err = f.srv.SetResources(Owner(&crd), rs)
	}
	if err != nil {
		f.log.Warn("custom resources: definition not served", "name", crd.Name, "err", err)
		f.remove(crd.Name)
		return
	}
	f.installed[crd.Name] = true
}

func (f *follower) remove(name string) {
	if !f.installed[name] {
		return
	}
	if err := f.srv.SetResources(name, nil); err != nil {
		f.log.Warn("custom resources: remove", "name", name, "err", err)
		return
	}
	delete(f.installed, name)
}

// follow applies the store's events until ctx ends, listing again when
// the watch breaks.
func (f *follower) follow(ctx context.Context, rev int64, done chan struct{}) {
	defer close(done)
	wait := 100 * time.Millisecond
	for ctx.Err() == nil {
		w, err := f.st.Watch(ctx, f.prefix, rev)
		if err == nil {
			for ev := range w.ResultChan() {
				switch ev.Type {
				case store.Added, store.Modified:
					f.apply(ev.KV)
				case store.Deleted:
					f.remove(f.name(ev.KV.Key))
				}
				rev = max(rev, ev.Revision)
			}
			err = w.Err()
			w.Stop()
		}
		if ctx.Err() != nil || errors.Is(err, store.ErrClosed) {
			return
		}
		f.log.Warn("custom resources: watch ended; listing again", "err", err)
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
			if rev, err = f.load(ctx); err == nil {
				break
			}
			wait = min(2*wait, 5*time.Second)
		}
	}
}
