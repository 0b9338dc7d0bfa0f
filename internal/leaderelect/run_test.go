package leaderelect

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/internal/testwait"
)

// newClient is a fake clientset whose Leases have resourceVersions and
// refuse a stale update with a conflict, as the API server does: the
// elector's optimistic renewal depends on it.
func newClient(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewClientset(objs...)
	gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
	var mu sync.Mutex
	next := 100
	cs.PrependReactor("create", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		l := a.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		next++
		l.ResourceVersion = strconv.Itoa(next)
		if err := cs.Tracker().Create(gvr, l, l.Namespace); err != nil {
			return true, nil, err
		}
		return true, l, nil
	})
	cs.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).DeepCopy()
		cur, err := cs.Tracker().Get(gvr, l.Namespace, l.Name)
		if err != nil {
			return true, nil, err
		}
		if cur.(*coordinationv1.Lease).ResourceVersion != l.ResourceVersion {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), l.Name, errors.New("the object has been modified"))
		}
		next++
		l.ResourceVersion = strconv.Itoa(next)
		if err := cs.Tracker().Update(gvr, l, l.Namespace); err != nil {
			return true, nil, err
		}
		return true, l, nil
	})
	return cs
}

// shortConfig is a configuration with durations short enough for tests.
func shortConfig() Config {
	o := NewOptions(SchedulerLease)
	o.LeaseDuration.Duration, o.RenewDeadline.Duration, o.RetryPeriod.Duration = 2*time.Second, time.Second, 100*time.Millisecond
	return Config{Options: *o, Component: "default-scheduler"}
}

// candidate runs id for the lease on client until stopped; lead reports
// on started and waits for its context.
type candidate struct {
	started chan struct{} // closed when lead starts
	leadEnd chan string   // the lease's holder when lead saw its context end
	done    chan error    // what run returned
	cancel  func()        // ends run's context
	logs    *testwait.Buffer
}

func startCandidate(t *testing.T, client kubernetes.Interface, c Config, id string) *candidate {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cd := &candidate{started: make(chan struct{}), leadEnd: make(chan string, 1), done: make(chan error, 1), cancel: cancel,
		logs: &testwait.Buffer{}}
	t.Cleanup(cancel)
	lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: c.ResourceNamespace, Name: c.ResourceName},
		Client: client.CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: id}}
	log := slog.New(slog.NewTextHandler(cd.logs, nil))
	go func() {
		cd.done <- run(ctx, c, lock, log, func(ctx context.Context) error {
			close(cd.started)
			<-ctx.Done()
			cd.leadEnd <- holder(t, client, c)
			return nil
		})
	}()
	return cd
}

func holder(t *testing.T, client kubernetes.Interface, c Config) string {
	l, err := client.CoordinationV1().Leases(c.ResourceNamespace).Get(context.Background(), c.ResourceName, metav1.GetOptions{})
	if err != nil {
		return "error: " + err.Error()
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: not within 20s", what)
	}
}

func waitDone(t *testing.T, cd *candidate) error {
	t.Helper()
	select {
	case err := <-cd.done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("run did not return within 20s; logs:\n%s", cd.logs)
		return nil
	}
}

// One candidate leads, a second stands by; when the leader is told to
// stop, its work ends while it still holds the lease, then it releases
// the lease and returns nil, and the second takes over at once.
func TestRunLeadsStandsByAndHandsOver_J1(t *testing.T) {
	t.Parallel()
	client := newClient()
	c := shortConfig()
	a := startCandidate(t, client, c, "a")
	waitClosed(t, a.started, "a leading")
	if got := holder(t, client, c); got != "a" {
		t.Fatalf("holder %q, want a", got)
	}
	b := startCandidate(t, client, c, "b")
	testwait.For(t, 10*time.Second, "b sees a lead", func() (bool, string) {
		return strings.Contains(b.logs.String(), "leader elected") && strings.Contains(b.logs.String(), "identity=a"), b.logs.String()
	})
	select {
	case <-b.started:
		t.Fatal("b leads while a holds the lease")
	default:
	}
	a.cancel()
	if got := <-a.leadEnd; got != "a" {
		t.Errorf("holder when a's work ended: %q, want a (released only after the work stopped)", got)
	}
	if err := waitDone(t, a); err != nil {
		t.Errorf("a returned %v, want nil", err)
	}
	start := time.Now()
	waitClosed(t, b.started, "b leading after a released the lease")
	// Released, the lease is free at b's next retry, long before it
	// would have expired.
	if d := time.Since(start); d >= c.LeaseDuration.Duration {
		t.Errorf("b took over after %v, want less than the lease duration %v", d, c.LeaseDuration.Duration)
	}
	if got := holder(t, client, c); got != "b" {
		t.Errorf("holder %q, want b", got)
	}
	for _, want := range []string{"became leader", "identity=a", "lease=kube-system/kube-scheduler"} {
		if !strings.Contains(a.logs.String(), want) {
			t.Errorf("a's logs lack %q:\n%s", want, a.logs)
		}
	}
}

// A lease another holder takes is lost: run returns ErrLost naming the
// lease and the renew deadline, and the work's context ends.
func TestRunLostLease_J1(t *testing.T) {
	t.Parallel()
	client := newClient()
	c := shortConfig()
	a := startCandidate(t, client, c, "a")
	waitClosed(t, a.started, "a leading")
	ctx := context.Background()
	l, err := client.CoordinationV1().Leases(c.ResourceNamespace).Get(ctx, c.ResourceName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Spec.HolderIdentity = ptr.To("intruder")
	l.Spec.LeaseDurationSeconds = ptr.To[int32](60)
	l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	if _, err := client.CoordinationV1().Leases(c.ResourceNamespace).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = waitDone(t, a)
	if !errors.Is(err, ErrLost) {
		t.Fatalf("got %v, want ErrLost", err)
	}
	for _, want := range []string{"lost leadership of lease kube-system/kube-scheduler", "--leader-elect-renew-deadline 1s"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !strings.Contains(a.logs.String(), "lost leadership") {
		t.Errorf("no lost leadership line:\n%s", a.logs)
	}
	select {
	case <-a.leadEnd:
	case <-time.After(10 * time.Second):
		t.Error("the work's context did not end with the lease")
	}
	if got := holder(t, client, c); got != "intruder" {
		t.Errorf("holder %q, want intruder (a lost lease is not released)", got)
	}
}

// Told to stop while standing by, run returns nil without running the
// work and leaves the holder's lease alone.
func TestRunStopsWhileStandingBy_J1(t *testing.T) {
	t.Parallel()
	c := shortConfig()
	client := newClient(&coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ResourceNamespace, Name: c.ResourceName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("other"), LeaseDurationSeconds: ptr.To[int32](3600),
			RenewTime: &metav1.MicroTime{Time: time.Now()}, AcquireTime: &metav1.MicroTime{Time: time.Now()}},
	})
	a := startCandidate(t, client, c, "a")
	testwait.For(t, 10*time.Second, "a sees other lead", func() (bool, string) {
		return strings.Contains(a.logs.String(), "identity=other"), a.logs.String()
	})
	a.cancel()
	if err := waitDone(t, a); err != nil {
		t.Errorf("got %v, want nil", err)
	}
	select {
	case <-a.started:
		t.Error("the work ran without the lease")
	default:
	}
	if got := holder(t, client, c); got != "other" {
		t.Errorf("holder %q, want other", got)
	}
}

// Work that ends on its own ends the run with its error, and hands the
// lease over.
func TestRunWorkErrorReleases_J1(t *testing.T) {
	t.Parallel()
	client := newClient()
	c := shortConfig()
	lock := &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: c.ResourceNamespace, Name: c.ResourceName},
		Client: client.CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: "a"}}
	boom := errors.New("boom")
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), c, lock, slog.New(slog.NewTextHandler(io.Discard, nil)), func(context.Context) error { return boom })
	}()
	select {
	case err := <-done:
		if !errors.Is(err, boom) {
			t.Errorf("got %v, want boom", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("run did not return")
	}
	if got := holder(t, client, c); got != "" {
		t.Errorf("holder %q, want the lease released", got)
	}
}

// With --leader-elect=false the work runs at once on the caller's context.
func TestRunWithoutElection_J1(t *testing.T) {
	t.Parallel()
	c := shortConfig()
	c.LeaderElect = false
	type key struct{}
	ctx := context.WithValue(context.Background(), key{}, "v")
	var got any
	if err := Run(ctx, c, func(ctx context.Context) error { got = ctx.Value(key{}); return nil }); err != nil {
		t.Fatal(err)
	}
	if got != "v" {
		t.Error("the work did not run on the caller's context")
	}
}

func TestIdentityHostnameUUID_J1(t *testing.T) {
	t.Parallel()
	a, err := Identity()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Identity()
	host, uid, ok := strings.Cut(a, "_")
	if !ok || host == "" || len(uid) != 36 || a == b {
		t.Errorf("identities %q and %q: want hostname_UUID, each new", a, b)
	}
}

// A leader whose renewals fail stops its work once the renew deadline has
// passed, before the lease's duration, when a standby may lead: nothing
// it does on the way out, such as a release that waits on an API server
// that does not answer, keeps the work going (J.1).
func TestRunStopsWorkWithinTheLease_J1(t *testing.T) {
	t.Parallel()
	client := newClient()
	var (
		mu        sync.Mutex
		failing   bool
		lastRenew time.Time
	)
	client.PrependReactor("update", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		mu.Lock()
		f := failing
		if !f {
			lastRenew = time.Now()
		}
		mu.Unlock()
		switch {
		case !f:
			return false, nil, nil // the resourceVersion reactor renews it
		case ptr.Deref(l.Spec.HolderIdentity, "") == "":
			time.Sleep(10 * time.Second) // a release the API server does not answer
		}
		return true, nil, apierrors.NewTimeoutError("the API server did not answer", 0)
	})
	c := shortConfig()
	c.LeaseDuration.Duration = 4 * time.Second
	a := startCandidate(t, client, c, "a")
	waitClosed(t, a.started, "a leading")
	testwait.For(t, 20*time.Second, "a renewal", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		failing = !lastRenew.IsZero()
		return failing, "no renewal yet"
	})
	select {
	case <-a.leadEnd:
	case <-time.After(20 * time.Second):
		t.Fatal("the work went on after the lease could not be renewed")
	}
	mu.Lock()
	took := time.Since(lastRenew)
	mu.Unlock()
	if took >= c.LeaseDuration.Duration {
		t.Errorf("the work ended %v after the last renewal, want within the lease duration %v", took, c.LeaseDuration.Duration)
	}
	if err := waitDone(t, a); !errors.Is(err, ErrLost) {
		t.Errorf("run returned %v, want ErrLost", err)
	}
}
