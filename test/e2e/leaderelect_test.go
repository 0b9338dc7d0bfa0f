package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/internal/testwait"
)

// electProc is a `kubegate controllers` or `kubegate scheduler` process
// taking part in an election.
type electProc struct {
	name   string
	cmd    *exec.Cmd
	stderr *testwait.Buffer
	exited chan struct{} // closed once it has exited
	code   int           // its exit code, once exited
}

func startElectProc(t *testing.T, name string, args ...string) *electProc {
	t.Helper()
	p := &electProc{name: name, cmd: exec.Command(kubegateBin, args...), stderr: &testwait.Buffer{}, exited: make(chan struct{})}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.code = p.cmd.ProcessState.ExitCode()
		close(p.exited)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

var identityLine = regexp.MustCompile(`msg="waiting for leadership" lease=\S+ identity=(\S+)`)

// identity is the holder identity the process logged it stands for.
func (p *electProc) identity(t *testing.T) string {
	t.Helper()
	var id string
	testwait.For(t, 30*time.Second, p.name+" identity", func() (bool, string) {
		if m := identityLine.FindStringSubmatch(p.stderr.String()); m != nil {
			id = m[1]
			return true, ""
		}
		return false, "not logged; stderr:\n" + p.stderr.String()
	})
	return id
}

// leads says whether p logged that it became leader.
func (p *electProc) leads() bool { return strings.Contains(p.stderr.String(), `msg="became leader"`) }

func leaseHolder(cs kubernetes.Interface, name string) (string, error) {
	l, err := cs.CoordinationV1().Leases("kube-system").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return ptr.Deref(l.Spec.HolderIdentity, ""), nil
}

// leader waits until one of candidates holds lease and has said so, and
// returns it and the others.
func leader(t *testing.T, cs kubernetes.Interface, lease string, candidates ...*electProc) (lead *electProc, others []*electProc) {
	t.Helper()
	ids := map[string]*electProc{}
	for _, c := range candidates {
		ids[c.identity(t)] = c
	}
	testwait.For(t, 60*time.Second, "a holder of "+lease, func() (bool, string) {
		h, err := leaseHolder(cs, lease)
		if err != nil {
			return false, err.Error()
		}
		lead = ids[h]
		return lead != nil && lead.leads(), fmt.Sprintf("holder %q", h)
	})
	for _, c := range candidates {
		if c != lead {
			others = append(others, c)
		}
	}
	return lead, others
}

// takeovers waits until each lease is held by its successor in next,
// and returns how long after since each holder first appeared, both
// followed at once.
func takeovers(t *testing.T, cs kubernetes.Interface, since time.Time, limit time.Duration, next map[string]*electProc) map[string]time.Duration {
	t.Helper()
	ids := map[string]string{}
	for lease, p := range next {
		ids[lease] = p.identity(t)
	}
	took := map[string]time.Duration{}
	testwait.For(t, limit+10*time.Second, "the successors holding their leases", func() (bool, string) {
		var seen []string
		for lease, p := range next {
			if _, ok := took[lease]; ok {
				continue
			}
			h, err := leaseHolder(cs, lease)
			if err == nil && h == ids[lease] {
				took[lease] = time.Since(since)
				continue
			}
			seen = append(seen, fmt.Sprintf("%s: holder %q (err %v); %s stderr:\n%s", lease, h, err, p.name, tail(p.stderr.String(), 10)))
		}
		return len(seen) == 0, strings.Join(seen, "\n")
	})
	for lease, p := range next {
		testwait.For(t, 30*time.Second, p.name+" saying it leads", func() (bool, string) { return p.leads(), p.stderr.String() })
		if took[lease] > limit {
			t.Errorf("%s took %v to take %s over, want at most %v", p.name, took[lease], lease, limit)
		}
	}
	return took
}

// webWatch follows the ReplicaSets and pods of app=web, every change of
// each as the API server orders them.
type webWatch struct {
	mu        sync.Mutex
	specs     map[types.UID]int32              // each ReplicaSet's spec.replicas now
	maxSpec   map[types.UID]int32              // and the most it asked for
	maxSum    int32                            // the most the ReplicaSets asked for together
	made      map[types.UID]map[types.UID]bool // the pods each ReplicaSet owned
	active    map[types.UID]bool
	maxActive int
	node      map[types.UID]string
	rebound   []string
}

func watchWeb(t *testing.T, cs kubernetes.Interface) *webWatch {
	t.Helper()
	w := &webWatch{specs: map[types.UID]int32{}, maxSpec: map[types.UID]int32{}, made: map[types.UID]map[types.UID]bool{},
		active: map[types.UID]bool{}, node: map[types.UID]string{}}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=web" }))
	rsInf := f.Apps().V1().ReplicaSets().Informer()
	rs := func(obj any) {
		r, ok := obj.(*appsv1.ReplicaSet)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		n := ptr.Deref(r.Spec.Replicas, 1)
		w.specs[r.UID] = n
		w.maxSpec[r.UID] = max(w.maxSpec[r.UID], n)
		var sum int32
		for _, n := range w.specs {
			sum += n
		}
		w.maxSum = max(w.maxSum, sum)
	}
	podInf := f.Core().V1().Pods().Informer()
	pod := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if ref := metav1.GetControllerOf(p); ref != nil {
			if w.made[ref.UID] == nil {
				w.made[ref.UID] = map[types.UID]bool{}
			}
			w.made[ref.UID][p.UID] = true
		}
		if old := w.node[p.UID]; old != "" && p.Spec.NodeName != old {
			w.rebound = append(w.rebound, fmt.Sprintf("%s: %s then %s", p.Name, old, p.Spec.NodeName))
		}
		if p.Spec.NodeName != "" {
			w.node[p.UID] = p.Spec.NodeName
		}
		w.active[p.UID] = p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
		n := 0
		for _, a := range w.active {
			if a {
				n++
			}
		}
		w.maxActive = max(w.maxActive, n)
	}
	final := func(obj any) any {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			return d.Obj
		}
		return obj
	}
	for inf, h := range map[cache.SharedIndexInformer]cache.ResourceEventHandlerFuncs{
		rsInf: {AddFunc: rs, UpdateFunc: func(_, obj any) { rs(obj) }, DeleteFunc: func(obj any) {
			if r, ok := final(obj).(*appsv1.ReplicaSet); ok {
				w.mu.Lock()
				delete(w.specs, r.UID)
				w.mu.Unlock()
			}
		}},
		podInf: {AddFunc: pod, UpdateFunc: func(_, obj any) { pod(obj) }, DeleteFunc: func(obj any) {
			if p, ok := final(obj).(*corev1.Pod); ok {
				w.mu.Lock()
				delete(w.active, p.UID)
				w.mu.Unlock()
			}
		}},
	} {
		if _, err := inf.AddEventHandler(h); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); f.Shutdown() })
	f.Start(stop)
	if !cache.WaitForCacheSync(stop, rsInf.HasSynced, podInf.HasSynced) {
		t.Fatal("informers did not sync")
	}
	return w
}

// check holds what was seen so far to one controller manager and one
// scheduler acting, and returns the most pods that were active at once.
//   - kube's surge rule: the Deployment's ReplicaSets never asked for more
//     than replicas+surge pods together;
//   - no ReplicaSet ever owned more pods than it asked for at most: in a
//     rollout a set only grows or only shrinks, so one pod more is a pod
//     made twice, by two ReplicaSet controllers acting at once;
//   - the pods active at once (not terminating, not finished) stay within
//     replicas+surge, plus up to surge pods an old set no longer wants and
//     its controller has not deleted yet when the new set's are made;
//   - no pod's node changed once set.
func (w *webWatch) check(t *testing.T, replicas, surge int32) int {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.maxSum > replicas+surge {
		t.Errorf("the ReplicaSets of web asked for %d pods together, want at most %d", w.maxSum, replicas+surge)
	}
	for rs, pods := range w.made {
		if len(pods) > int(w.maxSpec[rs]) {
			t.Errorf("ReplicaSet %s owned %d pods, asking for at most %d", rs, len(pods), w.maxSpec[rs])
		}
	}
	if w.maxActive > int(replicas+2*surge) {
		t.Errorf("%d pods of web were active at once, want at most %d", w.maxActive, replicas+2*surge)
	}
	if len(w.rebound) > 0 {
		t.Errorf("pods bound twice: %v", w.rebound)
	}
	return w.maxActive
}

// webRolledOut waits until the Deployment web has its replicas of the
// current template, all available, and nothing older.
func webRolledOut(t *testing.T, cs kubernetes.Interface, replicas int32, procs ...*electProc) {
	t.Helper()
	testwait.For(t, 120*time.Second, "deployment web rolled out", func() (bool, string) {
		d, err := cs.AppsV1().Deployments("default").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		s := d.Status
		done := s.ObservedGeneration == d.Generation && s.UpdatedReplicas == replicas && s.Replicas == replicas && s.AvailableReplicas == replicas
		var logs strings.Builder
		for _, p := range procs {
			fmt.Fprintf(&logs, "--- %s\n%s", p.name, tail(p.stderr.String(), 15))
		}
		return done, fmt.Sprintf("status %+v\n%s", s, logs.String())
	})
}

func tail(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}

// kubegate controllers and kubegate scheduler elect a leader as
// kube-controller-manager and kube-scheduler do (docs/kubernetes-behaviour.md
// J.1): of two copies of each against one API server, with kube's
// defaults, one holds each Lease and acts; a Deployment of 20 never has
// more than its 20 and kube's surge of 5 active pods, and no pod is bound
// twice. Killed with SIGKILL, a leader is replaced within the lease
// duration and retry periods; stopped with SIGTERM, it releases its lease
// and its successor takes over at once.
func TestLeaderElectionControllersAndScheduler_J1(t *testing.T) {
	t.Parallel()
	// The kubeconfigs name https://127.0.0.1:6443; the components reach
	// the API server through --master, the simulated nodes through a copy
	// of admin.conf that names its address.
	dir := pkiTree(t)
	p := startAPIServer(t, dir, t.TempDir(), 0)
	admin, err := clientcmd.LoadFromFile(filepath.Join(dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range admin.Clusters {
		c.Server = p.url
	}
	adminHere := filepath.Join(dir, "admin-here.conf")
	if err := clientcmd.WriteToFile(*admin, adminHere); err != nil {
		t.Fatal(err)
	}
	cs := clientset(t, dir, p.url)
	ctx := context.Background()

	startElectProc(t, "nodes", "nodes", "simulate", "--kubeconfig", adminHere, "--count", "3")
	controllers := func(name string) *electProc {
		return startElectProc(t, name, "controllers", "--kubeconfig", filepath.Join(dir, "controller-manager.conf"), "--master", p.url,
			"--use-service-account-credentials")
	}
	scheduler := func(name string) *electProc {
		return startElectProc(t, name, "scheduler", "--kubeconfig", filepath.Join(dir, "scheduler.conf"), "--master", p.url)
	}
	ctrlA, ctrlB := controllers("controllers-a"), controllers("controllers-b")
	schedA, schedB := scheduler("scheduler-a"), scheduler("scheduler-b")
	all := []*electProc{ctrlA, ctrlB, schedA, schedB}

	ctrlLead, ctrlRest := leader(t, cs, "kube-controller-manager", ctrlA, ctrlB)
	schedLead, schedRest := leader(t, cs, "kube-scheduler", schedA, schedB)
	ctrlNext, schedNext := ctrlRest[0], schedRest[0]
	for c, lead := range map[*electProc]*electProc{ctrlNext: ctrlLead, schedNext: schedLead} {
		want := `msg="leader elected" lease=kube-system/` + map[*electProc]string{ctrlNext: "kube-controller-manager",
			schedNext: "kube-scheduler"}[c] + " identity=" + lead.identity(t)
		testwait.For(t, 30*time.Second, c.name+" seeing the leader", func() (bool, string) {
			return strings.Contains(c.stderr.String(), want), c.stderr.String()
		})
		if c.leads() {
			t.Errorf("%s leads too:\n%s", c.name, c.stderr)
		}
	}
	// The LeaderElection events kube's components write, from kube's sources.
	for lease, source := range map[string]string{"kube-controller-manager": "kube-controller-manager", "kube-scheduler": "default-scheduler"} {
		holder, _ := leaseHolder(cs, lease)
		testwait.For(t, 30*time.Second, "LeaderElection event of "+lease, func() (bool, string) {
			evs, err := cs.CoreV1().Events("kube-system").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, e := range evs.Items {
				if e.Reason == "LeaderElection" && e.InvolvedObject.Kind == "Lease" && e.InvolvedObject.Name == lease &&
					e.Message == holder+" became leader" && e.Source.Component == source {
					return true, ""
				}
			}
			return false, fmt.Sprintf("%d events in kube-system, none from %s saying %q", len(evs.Items), source, holder+" became leader")
		})
	}

	web := watchWeb(t, cs)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](20),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	webRolledOut(t, cs, 20, all...)
	setImage := func(image string) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":%q}]}}}}`, image)
		if _, err := cs.AppsV1().Deployments("default").Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch),
			metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setImage("web:2")
	webRolledOut(t, cs, 20, all...)
	web.check(t, 20, 5)

	// SIGKILL both leaders: nothing is released, the lease must expire.
	// client-go's standby notices a renewal up to a jittered retry
	// period (2 s × 2.2) late and tries as late after expiry, so the
	// worst case is 15 s + 2 × 4.4 s; the rest is for a loaded machine.
	const killLimit = 35 * time.Second
	killed := time.Now()
	for _, l := range []*electProc{ctrlLead, schedLead} {
		if err := l.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	took := takeovers(t, cs, killed, killLimit, map[string]*electProc{"kube-controller-manager": ctrlNext, "kube-scheduler": schedNext})
	t.Logf("after SIGKILL of the leader: controllers taken over in %v, scheduler in %v (lease 15s, retry 2s)",
		took["kube-controller-manager"].Round(time.Millisecond), took["kube-scheduler"].Round(time.Millisecond))

	// The new leaders act: another rollout, again within the surge.
	setImage("web:3")
	webRolledOut(t, cs, 20, ctrlNext, schedNext)
	web.check(t, 20, 5)

	// SIGTERM: the leader stops, releases its lease and exits 0; a
	// standby takes it at its next retry, far within the lease duration.
	ctrlC, schedC := controllers("controllers-c"), scheduler("scheduler-c")
	for _, c := range []*electProc{ctrlC, schedC} {
		testwait.For(t, 30*time.Second, c.name+" standing by", func() (bool, string) {
			return strings.Contains(c.stderr.String(), `msg="leader elected"`), c.stderr.String()
		})
	}
	const termLimit = 10 * time.Second
	termed := time.Now()
	for _, l := range []*electProc{ctrlNext, schedNext} {
		if err := l.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	took = takeovers(t, cs, termed, termLimit, map[string]*electProc{"kube-controller-manager": ctrlC, "kube-scheduler": schedC})
	t.Logf("after SIGTERM of the leader: controllers taken over in %v, scheduler in %v",
		took["kube-controller-manager"].Round(time.Millisecond), took["kube-scheduler"].Round(time.Millisecond))
	for _, l := range []*electProc{ctrlNext, schedNext} {
		select {
		case <-l.exited:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s still running 30s after SIGTERM:\n%s", l.name, tail(l.stderr.String(), 20))
		}
		if l.code != 0 {
			t.Errorf("%s exited %d after SIGTERM, want 0:\n%s", l.name, l.code, tail(l.stderr.String(), 20))
		}
	}
	setImage("web:4")
	webRolledOut(t, cs, 20, ctrlC, schedC)
	t.Logf("web created and rolled out three times: at most %d pods active at once", web.check(t, 20, 5))

	for _, s := range []*electProc{schedA, schedB, schedC} {
		if strings.Contains(s.stderr.String(), "already assigned") {
			t.Errorf("%s logged a binding refused as already assigned:\n%s", s.name, s.stderr)
		}
	}
}
