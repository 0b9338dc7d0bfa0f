package garbagecollector_test

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/controllers/garbagecollector"
	"github.com/kubegate/kubegate/internal/testwait"
)

// extraDiscovery is the server's discovery with resources it does not
// serve added to it, which a test can withdraw.
type extraDiscovery struct {
	discovery.DiscoveryInterface
	mu    sync.Mutex
	extra []*metav1.APIResourceList
	reads int
}

func (d *extraDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	groups, lists, err := d.DiscoveryInterface.ServerGroupsAndResources()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.reads++
	return groups, append(lists, d.extra...), err
}

func (d *extraDiscovery) set(extra ...*metav1.APIResourceList) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.extra = extra
}

func (d *extraDiscovery) readCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reads
}

// getOnly is a discovery entry for kind served as resource in gv, with
// the verb get only, so the collector looks owners up there but does not
// watch it.
func getOnly(gv, resource, kind string) *metav1.APIResourceList {
	return &metav1.APIResourceList{GroupVersion: gv, APIResources: []metav1.APIResource{
		{Name: resource, Kind: kind, Namespaced: true, Verbs: metav1.Verbs{"get"}}}}
}

// startWithDiscovery runs the collector against a test API server, with
// discovery read again every few milliseconds.
func startWithDiscovery(t *testing.T, extra ...*metav1.APIResourceList) (kubernetes.Interface, *extraDiscovery) {
	t.Helper()
	s := apiservertest.Start(t)
	real, err := discovery.NewDiscoveryClientForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	d := &extraDiscovery{DiscoveryInterface: real, extra: extra}
	mc, err := metadata.NewForConfig(s.Config)
	if err != nil {
		t.Fatal(err)
	}
	c := garbagecollector.New(mc, d, metadatainformer.NewSharedInformerFactory(mc, 0),
		garbagecollector.Options{Workers: 2, ResyncPeriod: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	apiservertest.Run(t, c.Run)
	return s.Client, d
}

// collectedPast creates an orphan in default and waits until the
// collector has deleted it: an object made before it has been looked at.
func collectedPast(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	nobody := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "nobody", UID: types.UID("00000000-0000-0000-0000-0000000000aa")}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
		OwnerReferences: []metav1.OwnerReference{nobody}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	goneIn(t, cs, "default", name)
}

func createOwned(t *testing.T, cs kubernetes.Interface, name string, owner metav1.OwnerReference) {
	t.Helper()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
		OwnerReferences: []metav1.OwnerReference{owner}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func mustExist(t *testing.T, cs kubernetes.Interface, name, why string) {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
	if err != nil || cm.DeletionTimestamp != nil {
		t.Errorf("%s was deleted (err %v): %s", name, err, why)
	}
}

// An owner looked up at a resource the API server does not serve (in an
// unknown group, or in a served group) answers 404 for the path, not for
// the owner: the owner is not taken for gone and its dependents stay
// (G.8).
func TestOwnerOfUnservedResourceIsNotGone_G8(t *testing.T) {
	t.Parallel()
	cs, _ := startWithDiscovery(t, getOnly("example.com/v1", "widgets", "Widget"), getOnly("apps/v1", "gizmos", "Gizmo"))
	createOwned(t, cs, "of-widget", metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", UID: "00000000-0000-0000-0000-0000000000b1"})
	createOwned(t, cs, "of-gizmo", metav1.OwnerReference{APIVersion: "apps/v1", Kind: "Gizmo", Name: "g", UID: "00000000-0000-0000-0000-0000000000b2"})
	collectedPast(t, cs, "sentinel")
	mustExist(t, cs, "of-widget", "its owner's group is not served")
	mustExist(t, cs, "of-gizmo", "its owner's resource is not served")
}

// A kind that discovery stops listing is forgotten: an owner of that
// kind is not looked up at the resource that used to serve it (whose
// answer would say nothing of the owner), and its dependents stay (G.8).
func TestKindWithdrawnFromDiscoveryIsForgotten_G8(t *testing.T) {
	t.Parallel()
	// Gadgets were once served at configmaps; no config map is named
	// like the owner, so a lookup there would find it gone.
	cs, d := startWithDiscovery(t, getOnly("v1", "configmaps", "Gadget"))
	collectedPast(t, cs, "sentinel-1")
	d.set()
	after := d.readCount()
	testwait.For(t, wait, "discovery read twice more", func() (bool, string) {
		return d.readCount() >= after+2, "not yet"
	})
	createOwned(t, cs, "of-gadget", metav1.OwnerReference{APIVersion: "v1", Kind: "Gadget", Name: "gone", UID: "00000000-0000-0000-0000-0000000000b3"})
	collectedPast(t, cs, "sentinel-2")
	mustExist(t, cs, "of-gadget", "its owner's kind is no longer served")
}
