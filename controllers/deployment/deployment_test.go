package deployment_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/deployment"
	"github.com/kubegate/kubegate/internal/testwait"
)

const wait = 30 * time.Second

// cluster is the API server with the Deployment controller and a stand-in
// for the ReplicaSet controller running.
type cluster struct {
	t      *testing.T
	client kubernetes.Interface
	ns     string
}

// start runs the API server, the Deployment controller, and simReplicaSets
// with healthy deciding which ReplicaSets' pods ever become available.
func start(t *testing.T, healthy func(rs *appsv1.ReplicaSet) bool) *cluster {
	t.Helper()
	s := controllertest.Start(t, deployment.Descriptor)
	apiservertest.Run(t, func(ctx context.Context) error { simReplicaSets(ctx, s.Client, healthy); return nil })
	return &cluster{t: t, client: s.Client, ns: "default"}
}

// simReplicaSets stands in for the ReplicaSet controller at the level of
// ReplicaSet status, in two steps so that the Deployment controller sees
// pods that exist and are not yet available: a ReplicaSet whose status is
// behind its spec gets status.replicas = spec.replicas with its available
// replicas cut to at most that (pods removed go first among the
// available ones only if nothing else is left); then, if healthy says so,
// all of them become ready and available.
func simReplicaSets(ctx context.Context, client kubernetes.Interface, healthy func(rs *appsv1.ReplicaSet) bool) {
	zero := int32(0)
	for ctx.Err() == nil {
		list, err := client.AppsV1().ReplicaSets("").List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range list.Items {
				rs := &list.Items[i]
				want := *rs.Spec.Replicas
				st := &rs.Status
				switch {
				case st.Replicas != want || st.ObservedGeneration != rs.Generation:
					st.Replicas = want
					st.AvailableReplicas = min(st.AvailableReplicas, want)
					st.ReadyReplicas = st.AvailableReplicas
					st.FullyLabeledReplicas = want
					st.ObservedGeneration = rs.Generation
					st.TerminatingReplicas = &zero
				case st.AvailableReplicas < want && healthy(rs):
					st.AvailableReplicas, st.ReadyReplicas = want, want
				default:
					continue
				}
				_, _ = client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func allHealthy(*appsv1.ReplicaSet) bool { return true }

// imageNot makes healthy every ReplicaSet whose first container's image is
// not bad.
func imageNot(bad string) func(rs *appsv1.ReplicaSet) bool {
	return func(rs *appsv1.ReplicaSet) bool { return rs.Spec.Template.Spec.Containers[0].Image != bad }
}

func intOrStr(s string) *intstr.IntOrString { v := intstr.Parse(s); return &v }

// newDeployment is a Deployment of app=NAME pods running image.
func newDeployment(name, image string, replicas int32) *appsv1.Deployment {
	lbl := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
		},
	}
}

func (c *cluster) create(d *appsv1.Deployment) *appsv1.Deployment {
	c.t.Helper()
	out, err := c.client.AppsV1().Deployments(c.ns).Create(context.Background(), d, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}

func (c *cluster) get(name string) *appsv1.Deployment {
	c.t.Helper()
	d, err := c.client.AppsV1().Deployments(c.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	return d
}

// patch merge-patches the Deployment name.
func (c *cluster) patch(name, body string) {
	c.t.Helper()
	if _, err := c.client.AppsV1().Deployments(c.ns).Patch(context.Background(), name, types.MergePatchType, []byte(body), metav1.PatchOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *cluster) setImage(name, image string) {
	c.t.Helper()
	c.patch(name, fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":%q}]}}}}`, image))
}

// replicaSets lists the ReplicaSets of app=name, lowest revision first.
func (c *cluster) replicaSets(name string) []appsv1.ReplicaSet {
	c.t.Helper()
	list, err := c.client.AppsV1().ReplicaSets(c.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		c.t.Fatal(err)
	}
	rev := func(rs appsv1.ReplicaSet) int {
		n, _ := strconv.Atoi(rs.Annotations["deployment.kubernetes.io/revision"])
		return n
	}
	slices.SortFunc(list.Items, func(a, b appsv1.ReplicaSet) int { return rev(a) - rev(b) })
	return list.Items
}

// sizes writes the ReplicaSets of app=name as image=replicas, lowest
// revision first.
func (c *cluster) sizes(name string) string {
	var s []string
	for _, rs := range c.replicaSets(name) {
		s = append(s, fmt.Sprintf("%s=%d", rs.Spec.Template.Spec.Containers[0].Image, *rs.Spec.Replicas))
	}
	return strings.Join(s, ",")
}

// waitComplete waits for the Deployment name to have rolled out: its
// generation observed and every replica updated and available.
func (c *cluster) waitComplete(name string) *appsv1.Deployment {
	c.t.Helper()
	var d *appsv1.Deployment
	testwait.For(c.t, wait, "deployment "+name+" complete", func() (bool, string) {
		d = c.get(name)
		s := d.Status
		n := *d.Spec.Replicas
		return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == n && s.Replicas == n && s.AvailableReplicas == n &&
				condition(d, appsv1.DeploymentProgressing).Reason == deployment.ReasonNewReplicaSetAvailable,
			fmt.Sprintf("status %+v; replica sets %s", s, c.sizes(name))
	})
	return d
}

func condition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) appsv1.DeploymentCondition {
	for _, c := range d.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return appsv1.DeploymentCondition{}
}

// A Deployment's ReplicaSet is named after it and its template's hash,
// which it adds to the selector, the template and the labels; it carries
// the revision and replicas annotations and the Deployment's own
// annotations but kubectl's last applied configuration; the Deployment
// gets the revision, its status the counts and both conditions.
func TestCreatesReplicaSet_G3(t *testing.T) {
	t.Parallel()
	c := start(t, allHealthy)
	d := newDeployment("web", "nginx:1", 3)
	d.Annotations = map[string]string{"kubernetes.io/change-cause": "first", corev1.LastAppliedConfigAnnotation: "{}"}
	created := c.create(d)
	d = c.waitComplete("web")

	rss := c.replicaSets("web")
	if len(rss) != 1 {
		t.Fatalf("got %d replica sets, want 1", len(rss))
	}
	rs := rss[0]
	hash := deployment.PodTemplateHash(&created.Spec.Template, nil)
	if rs.Name != "web-"+hash {
		t.Errorf("replica set name %q, want web-%s", rs.Name, hash)
	}
	for what, m := range map[string]map[string]string{"labels": rs.Labels, "selector": rs.Spec.Selector.MatchLabels, "template labels": rs.Spec.Template.Labels} {
		if m["pod-template-hash"] != hash || m["app"] != "web" {
			t.Errorf("%s %v, want app=web and pod-template-hash=%s", what, m, hash)
		}
	}
	ref := metav1.GetControllerOf(&rs)
	if ref == nil || ref.Kind != "Deployment" || ref.Name != "web" || ref.UID != d.UID || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("controller reference %+v, want the Deployment's, blocking owner deletion", ref)
	}
	want := map[string]string{"deployment.kubernetes.io/revision": "1", "deployment.kubernetes.io/desired-replicas": "3",
		"deployment.kubernetes.io/max-replicas": "4", "kubernetes.io/change-cause": "first"}
	for k, v := range want {
		if rs.Annotations[k] != v {
			t.Errorf("replica set annotation %s=%q, want %q", k, rs.Annotations[k], v)
		}
	}
	if _, ok := rs.Annotations[corev1.LastAppliedConfigAnnotation]; ok {
		t.Errorf("the last applied configuration was copied to the replica set")
	}
	if d.Annotations["deployment.kubernetes.io/revision"] != "1" {
		t.Errorf("deployment revision %q, want 1", d.Annotations["deployment.kubernetes.io/revision"])
	}
	if s := d.Status; s.ReadyReplicas != 3 || s.UnavailableReplicas != 0 || s.TerminatingReplicas == nil || *s.TerminatingReplicas != 0 {
		t.Errorf("status %+v, want 3 ready, 0 unavailable, 0 terminating", s)
	}
	av := condition(d, appsv1.DeploymentAvailable)
	if av.Status != corev1.ConditionTrue || av.Reason != "MinimumReplicasAvailable" || av.Message != "Deployment has minimum availability." {
		t.Errorf("Available condition %+v", av)
	}
	pr := condition(d, appsv1.DeploymentProgressing)
	if pr.Status != corev1.ConditionTrue || pr.Message != fmt.Sprintf("ReplicaSet %q has successfully progressed.", rs.Name) {
		t.Errorf("Progressing condition %+v", pr)
	}

	// The ScalingReplicaSet event, as kube words it.
	msg := fmt.Sprintf("Scaled up replica set %s from 0 to 3", rs.Name)
	testwait.For(t, wait, "the ScalingReplicaSet event", func() (bool, string) {
		evs, err := c.client.CoreV1().Events(c.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Reason == "ScalingReplicaSet" && e.Message == msg && e.Source.Component == "deployment-controller" &&
				e.InvolvedObject.Kind == "Deployment" && e.InvolvedObject.Name == "web" && e.Type == corev1.EventTypeNormal {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, fmt.Sprint(seen)
	})
}

// states records every state of one app's ReplicaSets in the order the
// API server made them, and checks each against check.
type states struct {
	mu     sync.Mutex
	rss    map[string]*appsv1.ReplicaSet
	errs   []string
	count  int
	check  func(rss map[string]*appsv1.ReplicaSet) error
	stopCh chan struct{}
}

func watchStates(t *testing.T, client kubernetes.Interface, app string, check func(rss map[string]*appsv1.ReplicaSet) error) *states {
	t.Helper()
	s := &states{rss: map[string]*appsv1.ReplicaSet{}, check: check, stopCh: make(chan struct{})}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = "app=" + app
	}))
	inf := f.Apps().V1().ReplicaSets().Informer()
	seen := func(obj any, gone bool) {
		rs, ok := obj.(*appsv1.ReplicaSet)
		if t, isT := obj.(cache.DeletedFinalStateUnknown); isT {
			rs, ok = t.Obj.(*appsv1.ReplicaSet)
		}
		if !ok {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if gone {
			delete(s.rss, rs.Name)
		} else {
			s.rss[rs.Name] = rs
		}
		s.count++
		if err := s.check(s.rss); err != nil {
			s.errs = append(s.errs, err.Error())
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { seen(obj, false) },
		UpdateFunc: func(_, obj any) { seen(obj, false) },
		DeleteFunc: func(obj any) { seen(obj, true) },
	})
	f.Start(s.stopCh)
	t.Cleanup(func() { close(s.stopCh); f.Shutdown() })
	if !cache.WaitForCacheSync(s.stopCh, inf.HasSynced) {
		t.Fatal("replica set informer did not sync")
	}
	return s
}

func (s *states) failures(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count == 0 {
		t.Fatal("no replica set states were seen")
	}
	for _, e := range s.errs {
		t.Error(e)
	}
}

// A rolling update from 10 replicas, maxSurge 3 and maxUnavailable 2,
// never has more than 13 replicas asked for nor fewer than 8 available,
// in any state the ReplicaSets pass through; it ends with the new
// ReplicaSet at 10 and the old at 0, the Deployment at revision 2.
func TestRollingUpdateHonoursSurgeAndUnavailable_G3(t *testing.T) {
	t.Parallel()
	c := start(t, allHealthy)
	d := newDeployment("roll", "nginx:1", 10)
	d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: intOrStr("3"), MaxUnavailable: intOrStr("2")}
	c.create(d)
	c.waitComplete("roll")

	var mu sync.Mutex
	var moved bool // the rollout has begun: availability is counted from then on
	st := watchStates(t, c.client, "roll", func(rss map[string]*appsv1.ReplicaSet) error {
		var spec, avail int32
		for _, rs := range rss {
			spec += *rs.Spec.Replicas
			avail += min(*rs.Spec.Replicas, rs.Status.AvailableReplicas)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(rss) > 1 {
			moved = true
		}
		switch {
		case spec > 13:
			return fmt.Errorf("%d replicas asked for, more than 10 + maxSurge 3", spec)
		case moved && avail < 8:
			return fmt.Errorf("%d replicas available, fewer than 10 - maxUnavailable 2", avail)
		}
		return nil
	})
	c.setImage("roll", "nginx:2")
	d = c.waitComplete("roll")
	st.failures(t)
	if got := c.sizes("roll"); got != "nginx:1=0,nginx:2=10" {
		t.Errorf("replica sets %s, want nginx:1=0,nginx:2=10", got)
	}
	if d.Annotations["deployment.kubernetes.io/revision"] != "2" {
		t.Errorf("deployment revision %q, want 2", d.Annotations["deployment.kubernetes.io/revision"])
	}
}

// Recreate scales the old ReplicaSet to zero and waits for its pods to be
// gone before the new one has any replica.
func TestRecreateScalesOldToZeroFirst_G3(t *testing.T) {
	t.Parallel()
	c := start(t, allHealthy)
	d := newDeployment("re", "nginx:1", 3)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	c.create(d)
	c.waitComplete("re")
	st := watchStates(t, c.client, "re", func(rss map[string]*appsv1.ReplicaSet) error {
		var oldPods int32
		var newWant int32
		for _, rs := range rss {
			if rs.Spec.Template.Spec.Containers[0].Image == "nginx:1" {
				oldPods += max(*rs.Spec.Replicas, rs.Status.Replicas)
			} else {
				newWant += *rs.Spec.Replicas
			}
		}
		if oldPods > 0 && newWant > 0 {
			return fmt.Errorf("new replica set scaled to %d while the old one has %d", newWant, oldPods)
		}
		return nil
	})
	c.setImage("re", "nginx:2")
	c.waitComplete("re")
	st.failures(t)
	if got := c.sizes("re"); got != "nginx:1=0,nginx:2=3" {
		t.Errorf("replica sets %s, want nginx:1=0,nginx:2=3", got)
	}
}

// Only revisionHistoryLimit old ReplicaSets are kept, the oldest deleted.
func TestRevisionHistoryLimit_G3(t *testing.T) {
	t.Parallel()
	c := start(t, allHealthy)
	d := newDeployment("hist", "nginx:1", 2)
	one := int32(1)
	d.Spec.RevisionHistoryLimit = &one
	c.create(d)
	c.waitComplete("hist")
	for _, img := range []string{"nginx:2", "nginx:3"} {
		c.setImage("hist", img)
		c.waitComplete("hist")
	}
	testwait.For(t, wait, "the oldest replica set deleted", func() (bool, string) {
		got := c.sizes("hist")
		return got == "nginx:2=0,nginx:3=2", got
	})
}

// Rolling back as kubectl rollout undo does, by putting an old
// ReplicaSet's template back in the Deployment, makes that ReplicaSet the
// new one again: no third ReplicaSet, its revision the newest, the one it
// had kept in its revision history.
func TestRollbackReusesOldReplicaSet_G3(t *testing.T) {
	t.Parallel()
	c := start(t, allHealthy)
	c.create(newDeployment("undo", "nginx:1", 2))
	c.waitComplete("undo")
	first := c.replicaSets("undo")[0].Name
	c.setImage("undo", "nginx:2")
	c.waitComplete("undo")
	c.setImage("undo", "nginx:1")
	d := c.waitComplete("undo")
	rss := c.replicaSets("undo")
	if len(rss) != 2 || rss[1].Name != first || *rss[1].Spec.Replicas != 2 {
		t.Fatalf("replica sets %s, want the first (%s) back at 2, its revision the newest, and no other new one", c.sizes("undo"), first)
	}
	if a := rss[1].Annotations; a["deployment.kubernetes.io/revision"] != "3" || a["deployment.kubernetes.io/revision-history"] != "1" {
		t.Errorf("rolled back replica set revision %q history %q, want 3 and 1", a["deployment.kubernetes.io/revision"], a["deployment.kubernetes.io/revision-history"])
	}
	if d.Annotations["deployment.kubernetes.io/revision"] != "3" {
		t.Errorf("deployment revision %q, want 3", d.Annotations["deployment.kubernetes.io/revision"])
	}
}

// A Deployment scaled in the middle of a stuck rollout has the new
// replicas shared in proportion among its ReplicaSets (kube's documented
// example: 10 replicas, surge 3, unavailable 2, the new template never
// available, then scaled to 20).
func TestProportionalScaling_G3(t *testing.T) {
	t.Parallel()
	c := start(t, imageNot("nginx:bad"))
	d := newDeployment("prop", "nginx:1", 10)
	d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: intOrStr("3"), MaxUnavailable: intOrStr("2")}
	c.create(d)
	c.waitComplete("prop")
	c.setImage("prop", "nginx:bad")
	testwait.For(t, wait, "the rollout stuck at 8 old and 5 new", func() (bool, string) {
		got := c.sizes("prop")
		return got == "nginx:1=8,nginx:bad=5", got
	})
	c.patch("prop", `{"spec":{"replicas":20}}`)
	testwait.For(t, wait, "the 10 more shared 6 to the old and 4 to the new", func() (bool, string) {
		got := c.sizes("prop")
		return got == "nginx:1=14,nginx:bad=9", got
	})
	for _, rs := range c.replicaSets("prop") {
		if rs.Annotations["deployment.kubernetes.io/desired-replicas"] != "20" || rs.Annotations["deployment.kubernetes.io/max-replicas"] != "23" {
			t.Errorf("%s replicas annotations %v, want desired 20 and max 23", rs.Name, rs.Annotations)
		}
	}
}

// A rollout that makes no progress for progressDeadlineSeconds goes
// Progressing False ProgressDeadlineExceeded, and the Deployment shows
// too few available.
func TestProgressDeadlineExceeded_G3(t *testing.T) {
	t.Parallel()
	c := start(t, imageNot("nginx:bad"))
	d := newDeployment("slow", "nginx:bad", 2)
	one := int32(1)
	d.Spec.ProgressDeadlineSeconds = &one
	c.create(d)
	testwait.For(t, wait, "ProgressDeadlineExceeded", func() (bool, string) {
		d = c.get("slow")
		pr := condition(d, appsv1.DeploymentProgressing)
		return pr.Reason == deployment.ReasonProgressDeadlineExceeded, fmt.Sprintf("%+v", d.Status.Conditions)
	})
	rs := c.replicaSets("slow")[0]
	if pr := condition(d, appsv1.DeploymentProgressing); pr.Status != corev1.ConditionFalse || pr.Message != fmt.Sprintf("ReplicaSet %q has timed out progressing.", rs.Name) {
		t.Errorf("Progressing condition %+v", pr)
	}
	if av := condition(d, appsv1.DeploymentAvailable); av.Status != corev1.ConditionFalse || av.Reason != "MinimumReplicasUnavailable" ||
		av.Message != "Deployment does not have minimum availability." {
		t.Errorf("Available condition %+v", av)
	}
	if d.Status.UnavailableReplicas != 2 {
		t.Errorf("unavailableReplicas %d, want 2", d.Status.UnavailableReplicas)
	}
}

// A paused Deployment says so in its Progressing condition, does not roll
// out a new template but is scaled; resumed, it says so and rolls out.
func TestPauseAndResume_G3(t *testing.T) {
	t.Parallel()
	c := start(t, allHealthy)
	c.create(newDeployment("pause", "nginx:1", 2))
	c.waitComplete("pause")
	c.patch("pause", `{"spec":{"paused":true}}`)
	testwait.For(t, wait, "DeploymentPaused", func() (bool, string) {
		pr := condition(c.get("pause"), appsv1.DeploymentProgressing)
		return pr.Reason == deployment.ReasonDeploymentPaused && pr.Status == corev1.ConditionUnknown && pr.Message == "Deployment is paused", fmt.Sprintf("%+v", pr)
	})
	c.setImage("pause", "nginx:2")
	c.patch("pause", `{"spec":{"replicas":4}}`)
	testwait.For(t, wait, "the paused deployment scaled, not rolled out", func() (bool, string) {
		d := c.get("pause")
		got := c.sizes("pause")
		return got == "nginx:1=4" && d.Status.ObservedGeneration == d.Generation, got
	})
	c.patch("pause", `{"spec":{"paused":false}}`)
	d := c.waitComplete("pause")
	if got := c.sizes("pause"); got != "nginx:1=0,nginx:2=4" {
		t.Errorf("replica sets %s after resuming, want nginx:1=0,nginx:2=4", got)
	}
	if d.Annotations["deployment.kubernetes.io/revision"] != "2" {
		t.Errorf("revision %q, want 2", d.Annotations["deployment.kubernetes.io/revision"])
	}
}

// An orphan ReplicaSet the selector matches is adopted and, its template
// being the Deployment's, becomes its new ReplicaSet.
func TestAdoptsOrphanReplicaSet_G3(t *testing.T) {
	t.Parallel()
	c := start(t, allHealthy)
	d := newDeployment("adopt", "nginx:1", 2)
	tmpl := d.Spec.Template.DeepCopy()
	tmpl.Labels["pod-template-hash"] = "orphan"
	two := int32(2)
	_, err := c.client.AppsV1().ReplicaSets(c.ns).Create(context.Background(), &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "adopt-orphan", Labels: tmpl.Labels},
		Spec:       appsv1.ReplicaSetSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: *tmpl},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created := c.create(d)
	c.waitComplete("adopt")
	rss := c.replicaSets("adopt")
	if len(rss) != 1 || rss[0].Name != "adopt-orphan" {
		t.Fatalf("replica sets %v, want only the adopted adopt-orphan", rss)
	}
	if ref := metav1.GetControllerOf(&rss[0]); ref == nil || ref.UID != created.UID {
		t.Errorf("controller reference %+v, want the Deployment's", ref)
	}
}

// The pod-template-hash is kube's: FNV-32a over the template's deep dump,
// safe-encoded, and the collision count changes it.
func TestPodTemplateHash_G3(t *testing.T) {
	t.Parallel()
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	h := deployment.PodTemplateHash(tmpl, nil)
	if h != deployment.PodTemplateHash(tmpl.DeepCopy(), nil) {
		t.Errorf("the hash of a copy differs")
	}
	one := int32(1)
	if h == deployment.PodTemplateHash(tmpl, &one) {
		t.Errorf("the collision count does not change the hash")
	}
	for _, r := range h {
		if !strings.ContainsRune("bcdfghjklmnpqrstvwxz2456789", r) {
			t.Errorf("hash %q has %q, outside the safe alphabet", h, r)
		}
	}
}

// The deprecated.deployment.rollback.to annotation (extensions/v1beta1's
// spec.rollbackTo) rolls the Deployment back to that revision's template
// and annotations, then goes; a revision that does not exist is a Warning
// event and the annotation still goes.
func TestRollbackAnnotation_G3(t *testing.T) {
	t.Parallel()
	c := start(t, allHealthy)
	d := newDeployment("rb", "nginx:1", 2)
	d.Annotations = map[string]string{"kubernetes.io/change-cause": "one"}
	c.create(d)
	c.waitComplete("rb")
	c.patch("rb", `{"metadata":{"annotations":{"kubernetes.io/change-cause":"two"}},"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:2"}]}}}}`)
	c.waitComplete("rb")

	c.patch("rb", `{"metadata":{"annotations":{"deprecated.deployment.rollback.to":"0"}}}`)
	testwait.For(t, wait, "rolled back to revision 1 as revision 3", func() (bool, string) {
		d := c.get("rb")
		img := d.Spec.Template.Spec.Containers[0].Image
		_, pending := d.Annotations["deprecated.deployment.rollback.to"]
		return img == "nginx:1" && !pending && d.Annotations["kubernetes.io/change-cause"] == "one" &&
				d.Annotations["deployment.kubernetes.io/revision"] == "3",
			fmt.Sprintf("image %s, annotations %v", img, d.Annotations)
	})
	c.waitComplete("rb")
	if got := c.sizes("rb"); got != "nginx:2=0,nginx:1=2" {
		t.Errorf("replica sets %s, want nginx:2=0,nginx:1=2", got)
	}
	c.patch("rb", `{"metadata":{"annotations":{"deprecated.deployment.rollback.to":"42"}}}`)
	testwait.For(t, wait, "the DeploymentRollbackRevisionNotFound event", func() (bool, string) {
		_, pending := c.get("rb").Annotations["deprecated.deployment.rollback.to"]
		evs, err := c.client.CoreV1().Events(c.ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Reason == "DeploymentRollbackRevisionNotFound" && e.Message == "Unable to find the revision to rollback to." &&
				e.Type == corev1.EventTypeWarning && !pending {
				return true, ""
			}
		}
		return false, fmt.Sprintf("pending %v, %d events", pending, len(evs.Items))
	})
}

// Recreate waits for the old ReplicaSets' pods to be gone, not only for
// their counts to reach zero: a pod of the old ReplicaSet that has not
// finished holds the new one back until it is deleted.
func TestRecreateWaitsForOldPods_G3(t *testing.T) {
	t.Parallel()
	c := start(t, allHealthy)
	d := newDeployment("rp", "nginx:1", 1)
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	c.create(d)
	var old appsv1.ReplicaSet
	testwait.For(t, wait, "the first replica set", func() (bool, string) {
		rss := c.replicaSets("rp")
		if len(rss) == 1 {
			old = rss[0]
		}
		return len(rss) == 1, fmt.Sprint(len(rss))
	})
	ctx := context.Background()
	yes := true
	_, err := c.client.CoreV1().Pods(c.ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "rp-old", Labels: old.Spec.Template.Labels, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: old.Name, UID: old.UID, Controller: &yes}}},
		Spec: old.Spec.Template.Spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.waitComplete("rp")
	c.setImage("rp", "nginx:2")
	testwait.For(t, wait, "the old replica set emptied and its emptiness seen", func() (bool, string) {
		d := c.get("rp")
		return d.Status.ObservedGeneration == d.Generation && d.Status.Replicas == 0, fmt.Sprintf("%+v; %s", d.Status, c.sizes("rp"))
	})
	if got := c.sizes("rp"); got != "nginx:1=0" {
		t.Fatalf("replica sets %s while an old pod is left, want only nginx:1=0", got)
	}
	if err := c.client.CoreV1().Pods(c.ns).Delete(ctx, "rp-old", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	c.waitComplete("rp")
	if got := c.sizes("rp"); got != "nginx:1=0,nginx:2=1" {
		t.Errorf("replica sets %s once the old pod is gone, want nginx:1=0,nginx:2=1", got)
	}
}
