package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/internal/testwait"
)

// mirrorController is a controller written only with client-go's standard
// machinery, as a third party would write one: a typed shared informer
// and lister of ConfigMaps, a metadata-only informer of Secrets, a rate
// limited work queue. For every ConfigMap labelled mirror=yes it makes a
// Secret NAME-mirror owned by the ConfigMap, and once its metadata
// informer has seen that Secret it annotates the ConfigMap
// mirrored-by=IDENTITY.
type mirrorController struct {
	identity string
	client   kubernetes.Interface
	cms      cache.SharedIndexInformer
	secrets  cache.GenericLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
}

const mirrorNS = "default"

func newMirrorController(cfg *rest.Config, identity string) (*mirrorController, informers.SharedInformerFactory, metadatainformer.SharedInformerFactory, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	typed := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(mirrorNS),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "mirror=yes" }))
	metaFactory := metadatainformer.NewFilteredSharedInformerFactory(meta, 0, mirrorNS, nil)
	cms := typed.Core().V1().ConfigMaps().Informer()
	secrets := metaFactory.ForResource(corev1.SchemeGroupVersion.WithResource("secrets"))
	c := &mirrorController{identity: identity, client: client, cms: cms, secrets: secrets.Lister(),
		synced: []cache.InformerSynced{cms.HasSynced, secrets.Informer().HasSynced},
		queue:  workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	enqueue := func(obj any) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := cms.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }}); err != nil {
		return nil, nil, nil, err
	}
	// A mirror Secret seen by the metadata informer requeues its ConfigMap.
	if _, err := secrets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			return
		}
		for _, ref := range m.OwnerReferences {
			if ref.Kind == "ConfigMap" {
				c.queue.Add(m.Namespace + "/" + ref.Name)
			}
		}
	}}); err != nil {
		return nil, nil, nil, err
	}
	return c, typed, metaFactory, nil
}

func (c *mirrorController) run(ctx context.Context) error {
	defer c.queue.ShutDown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("caches did not sync")
	}
	go func() { <-ctx.Done(); c.queue.ShutDown() }()
	for {
		key, quit := c.queue.Get()
		if quit {
			return nil
		}
		if err := c.sync(ctx, key); err != nil && ctx.Err() == nil {
			c.queue.AddRateLimited(key)
		} else {
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

func (c *mirrorController) sync(ctx context.Context, key string) error {
	obj, exists, err := c.cms.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return err
	}
	cm := obj.(*corev1.ConfigMap)
	name := cm.Name + "-mirror"
	if _, err := c.secrets.ByNamespace(cm.Namespace).Get(name); apierrors.IsNotFound(err) {
		_, err := c.client.CoreV1().Secrets(cm.Namespace).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}}},
			StringData: cm.Data}, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err // the metadata informer requeues once it sees it
	} else if err != nil {
		return err
	}
	if cm.Annotations["mirrored-by"] != "" {
		return nil
	}
	cm = cm.DeepCopy()
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations["mirrored-by"] = c.identity
	_, err = c.client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

// candidate runs identity for leader election on the Lease
// kube-system/mirror-controller and, while it leads, the mirror
// controller. It returns a function that stops it.
func candidate(t *testing.T, cfg *rest.Config, identity string, leading chan<- string) func() {
	ctx, cancel := context.WithCancel(context.Background())
	client := kubernetes.NewForConfigOrDie(cfg)
	lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "mirror-controller"},
		Client: client.CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: identity}}
	var wg sync.WaitGroup
	wg.Go(func() {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock: lock, ReleaseOnCancel: true, Name: "mirror-controller",
			LeaseDuration: 6 * time.Second, RenewDeadline: 4 * time.Second, RetryPeriod: 500 * time.Millisecond,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					c, typed, meta, err := newMirrorController(cfg, identity)
					if err != nil {
						t.Errorf("%s: %v", identity, err)
						return
					}
					typed.Start(ctx.Done())
					meta.Start(ctx.Done())
					leading <- identity
					if err := c.run(ctx); err != nil && ctx.Err() == nil {
						t.Errorf("%s: %v", identity, err)
					}
					typed.Shutdown()
					meta.Shutdown()
				},
				OnStoppedLeading: func() {},
			},
		})
	})
	return func() { cancel(); wg.Wait() }
}

// A controller built only from client-go's standard machinery (shared
// informers and listers, a metadata informer, a work queue, leader
// election on a Lease) runs unmodified against kubegate up: one of two
// candidates leads and does the work; when it stops, releasing the
// Lease, the other takes over and carries on.
func TestClientGoControllerRunsAgainstUp(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cluster")
	startUp(t, dir, 0)
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	mk := func(name string) {
		t.Helper()
		if _, err := client.CoreV1().ConfigMaps(mirrorNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{"mirror": "yes"}}, Data: map[string]string{"k": name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mirroredBy := func(name string) string {
		var by string
		testwait.For(t, 45*time.Second, "configmap "+name+" mirrored", func() (bool, string) {
			cm, err := client.CoreV1().ConfigMaps(mirrorNS).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			by = cm.Annotations["mirrored-by"]
			return by != "", fmt.Sprintf("annotations %v", cm.Annotations)
		})
		s, err := client.CoreV1().Secrets(mirrorNS).Get(ctx, name+"-mirror", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(s.Data["k"]) != name || len(s.OwnerReferences) != 1 || s.OwnerReferences[0].Name != name {
			t.Errorf("mirror secret %s: data %q, owners %+v", s.Name, s.Data, s.OwnerReferences)
		}
		return by
	}

	leading := make(chan string, 4)
	stopA := candidate(t, cfg, "a", leading)
	first := <-leading
	if first != "a" {
		t.Fatalf("leader %q, want a (the only candidate)", first)
	}
	stopB := candidate(t, cfg, "b", leading)
	defer stopB()
	mk("one")
	if by := mirroredBy("one"); by != "a" {
		t.Errorf("one mirrored by %q, want the leader a", by)
	}
	select {
	case who := <-leading:
		t.Fatalf("%s leads while a still does", who)
	case <-time.After(time.Second):
	}
	stopA()
	select {
	case who := <-leading:
		if who != "b" {
			t.Fatalf("after a stopped, %q leads, want b", who)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("b did not take over within 30 s of a releasing the Lease")
	}
	lease, err := client.CoordinationV1().Leases("kube-system").Get(ctx, "mirror-controller", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != "b" || lease.Spec.LeaseTransitions == nil || *lease.Spec.LeaseTransitions < 1 {
		t.Errorf("lease spec %+v, want holder b after a transition", lease.Spec)
	}
	mk("two")
	if by := mirroredBy("two"); by != "b" {
		t.Errorf("two mirrored by %q, want the new leader b", by)
	}
	// The metadata informer's view: names and owners, no data.
	sel := labels.Everything()
	list, err := metadata.NewForConfigOrDie(cfg).Resource(corev1.SchemeGroupVersion.WithResource("secrets")).Namespace(mirrorNS).
		List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, m := range list.Items {
		if m.Name == "one-mirror" || m.Name == "two-mirror" {
			found++
			if len(m.OwnerReferences) != 1 || m.OwnerReferences[0].Kind != "ConfigMap" || m.UID == "" {
				t.Errorf("metadata list item %s: uid %q, owners %+v", m.Name, m.UID, m.OwnerReferences)
			}
		}
	}
	if found != 2 {
		t.Errorf("metadata list found %d mirrors, want 2", found)
	}
}
