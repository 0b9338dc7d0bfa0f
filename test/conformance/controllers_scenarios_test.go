package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// A controllerScenario drives the controllers through a few steps in a
// namespace of its own. Each step changes something and waits until the
// controllers have settled; the recording then shows what they did.
type controllerScenario struct {
	name  string
	kinds []string // what to watch besides events
	run   func(r *scenarioRun) error
}

// Timeouts of a scenario's waits: generous for a loaded machine. A step
// that does not settle ends the scenario; its recording says so.
const (
	settleTimeout = 60 * time.Second
	// quietPeriod is how long no watch event must arrive before a
	// settled step is recorded, so that the controllers' last status
	// writes are in it.
	quietPeriod = time.Second
)

// pause is an image no simulated node pulls.
const (
	imageV1 = "registry.k8s.io/pause:3.10"
	imageV2 = "registry.k8s.io/pause:3.9"
)

func controllerScenarios() []controllerScenario {
	return []controllerScenario{
		{name: "deployment-rollout-undo", kinds: []string{"Deployment", "ReplicaSet", "Pod"}, run: func(r *scenarioRun) error {
			r.create(deploymentYAML("app", 3, imageV1))
			if err := r.settle("create deployment app, 3 replicas", deploymentDone("app", 3)); err != nil {
				return err
			}
			r.patch("Deployment", "app", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"`+imageV2+`"}]}}}}`)
			if err := r.settle("set image "+imageV2, deploymentDone("app", 3)); err != nil {
				return err
			}
			r.kubectl("Deployment", "app", "rollout", "undo", "deployment/app")
			return r.settle("kubectl rollout undo", deploymentDone("app", 3))
		}},
		{name: "replicaset-scale", kinds: []string{"ReplicaSet", "Pod"}, run: func(r *scenarioRun) error {
			r.create(replicaSetYAML("web", 2))
			if err := r.settle("create replicaset web, 2 replicas", replicaSetDone("web", 2)); err != nil {
				return err
			}
			r.patch("ReplicaSet", "web", `{"spec":{"replicas":4}}`)
			if err := r.settle("scale to 4", replicaSetDone("web", 4)); err != nil {
				return err
			}
			r.patch("ReplicaSet", "web", `{"spec":{"replicas":1}}`)
			return r.settle("scale to 1", replicaSetDone("web", 1))
		}},
		{name: "job-complete", kinds: []string{"Job", "Pod"}, run: func(r *scenarioRun) error {
			r.create(jobYAML("done", 2, 2, 6, 0))
			return r.settle("create job done: 2 completions, pods exit 0 after 1s", jobCondition("done", "Complete"))
		}},
		{name: "job-backoff-limit", kinds: []string{"Job", "Pod"}, run: func(r *scenarioRun) error {
			r.create(jobYAML("fail", 1, 1, 1, 1))
			return r.settle("create job fail: backoffLimit 1, pods exit 1 after 1s", jobCondition("fail", "Failed"))
		}},
		{name: "daemonset", kinds: []string{"DaemonSet", "ControllerRevision", "Pod"}, run: func(r *scenarioRun) error {
			r.create(daemonSetYAML("ds"))
			return r.settle("create daemonset ds", daemonSetDone("ds", simulatedNodes))
		}},
		{name: "statefulset", kinds: []string{"StatefulSet", "ControllerRevision", "Pod"}, run: func(r *scenarioRun) error {
			r.create(statefulSetYAML("db", 3))
			return r.settle("create statefulset db, 3 replicas", statefulSetDone("db", 3))
		}},
		{name: "namespace-delete", kinds: []string{"Namespace", "ConfigMap", "ServiceAccount"}, run: func(r *scenarioRun) error {
			r.create(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"a":"1"}}`)
			if err := r.settle("create configmap settings", exists("ConfigMap", "settings")); err != nil {
				return err
			}
			r.deleteNamespace()
			return r.settle("delete the namespace", gone("Namespace", r.ns))
		}},
		{name: "delete-background", kinds: []string{"ReplicaSet", "Pod"}, run: deletion("Background")},
		{name: "delete-foreground", kinds: []string{"ReplicaSet", "Pod"}, run: deletion("Foreground")},
		{name: "delete-orphan", kinds: []string{"ReplicaSet", "Pod"}, run: deletion("Orphan")},
		{name: "gc-owner-coordinates", kinds: []string{"Deployment", "ReplicaSet", "Pod", "ConfigMap"}, run: ownerCoordinates},
		{name: "endpointslices", kinds: []string{"Pod", "Endpoints", "EndpointSlice"}, run: func(r *scenarioRun) error {
			for _, name := range []string{"web-a", "web-b"} {
				r.create(podYAML(name, "web"))
			}
			if err := r.settle("create pods web-a and web-b", podsRunning(2)); err != nil {
				return err
			}
			r.create(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},
"spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80,"targetPort":8080}]}}`)
			if err := r.settle("create service web", sliceEndpoints("web", 2)); err != nil {
				return err
			}
			r.delete("Pod", "web-b", "")
			return r.settle("delete pod web-b", sliceEndpoints("web", 1))
		}},
		// A cluster-scoped kind is recorded when the object has the
		// namespace's name.
		{name: "vap-typechecking", kinds: []string{"ValidatingAdmissionPolicy"}, run: func(r *scenarioRun) error {
			r.create(deploymentPolicyYAML(r.ns, "object.spec.replicas <= 5", `object.spec.replicas > \"1\"`, "object.spec.paused == 1"))
			if err := r.settle("create a policy with two expressions the Deployment schema refutes", policyChecked(r.ns, 1)); err != nil {
				return err
			}
			r.patch("ValidatingAdmissionPolicy", r.ns, `{"spec":{"validations":[{"expression":"object.spec.replicas <= 5"}]}}`)
			return r.settle("keep only the sound expression", policyChecked(r.ns, 2))
		}},
	}
}

// deploymentPolicyYAML is a ValidatingAdmissionPolicy on Deployment
// creates with the expressions given.
func deploymentPolicyYAML(name string, expressions ...string) string {
	var validations []string
	for _, e := range expressions {
		validations = append(validations, `{"expression":"`+e+`"}`)
	}
	return `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"` + name + `"},
"spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[{"operations":["CREATE"],"apiGroups":["apps"],"apiVersions":["v1"],"resources":["deployments"]}]},
"validations":[` + strings.Join(validations, ",") + `]}}`
}

// policyChecked is the type checking controller's status of generation
// gen.
func policyChecked(name string, gen int64) condition {
	return func(r *recorder) (bool, string) {
		u := r.get("ValidatingAdmissionPolicy", name)
		if u == nil {
			return false, "policy " + name + " not seen"
		}
		return num(u, "status", "observedGeneration") == gen, fmt.Sprintf("policy %s at observed generation %d", name, num(u, "status", "observedGeneration"))
	}
}

// deletion creates a ReplicaSet of 2 and deletes it with policy.
func deletion(policy string) func(r *scenarioRun) error {
	return func(r *scenarioRun) error {
		r.create(replicaSetYAML("rs", 2))
		if err := r.settle("create replicaset rs, 2 replicas", replicaSetDone("rs", 2)); err != nil {
			return err
		}
		r.delete("ReplicaSet", "rs", policy)
		done := gone("ReplicaSet", "rs")
		if policy == "Orphan" {
			return r.settle("delete replicaset rs, propagationPolicy "+policy, done)
		}
		return r.settle("delete replicaset rs, propagationPolicy "+policy, all(done, podsRunning(0)))
	}
}

func deploymentYAML(name string, replicas int, image string) string {
	return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":%[1]q},
"spec":{"replicas":%[2]d,"selector":{"matchLabels":{"app":%[1]q}},
"template":{"metadata":{"labels":{"app":%[1]q}},"spec":{"containers":[{"name":"app","image":%[3]q}]}}}}`, name, replicas, image)
}

func replicaSetYAML(name string, replicas int) string {
	return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":%[1]q},
"spec":{"replicas":%[2]d,"selector":{"matchLabels":{"app":%[1]q}},
"template":{"metadata":{"labels":{"app":%[1]q}},"spec":{"containers":[{"name":"app","image":%[3]q}]}}}}`, name, replicas, imageV1)
}

// jobYAML is a Job whose pods the simulated nodes finish with exitCode a
// second after they start.
func jobYAML(name string, completions, parallelism, backoffLimit, exitCode int) string {
	return fmt.Sprintf(`{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":%[1]q},
"spec":{"completions":%[2]d,"parallelism":%[3]d,"backoffLimit":%[4]d,
"template":{"metadata":{"annotations":{"nodesim.kubegate.io/complete-after":"1s","nodesim.kubegate.io/exit-code":"%[5]d"}},
"spec":{"restartPolicy":"Never","containers":[{"name":"work","image":%[6]q}]}}}}`, name, completions, parallelism, backoffLimit, exitCode, imageV1)
}

func daemonSetYAML(name string) string {
	return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":%[1]q},
"spec":{"selector":{"matchLabels":{"app":%[1]q}},
"template":{"metadata":{"labels":{"app":%[1]q}},"spec":{"containers":[{"name":"agent","image":%[2]q}]}}}}`, name, imageV1)
}

func statefulSetYAML(name string, replicas int) string {
	return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":%[1]q},
"spec":{"replicas":%[2]d,"serviceName":%[1]q,"selector":{"matchLabels":{"app":%[1]q}},
"template":{"metadata":{"labels":{"app":%[1]q}},"spec":{"containers":[{"name":"db","image":%[3]q}]}}}}`, name, replicas, imageV1)
}

func podYAML(name, app string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q,"labels":{"app":%q}},
"spec":{"containers":[{"name":"web","image":%q,"ports":[{"containerPort":8080}]}]}}`, name, app, imageV1)
}

// A condition is what a step waits for, judged on the recorder's view:
// whether it holds, and what was seen when it does not.
type condition func(r *recorder) (bool, string)

func all(cs ...condition) condition {
	return func(r *recorder) (bool, string) {
		for _, c := range cs {
			if ok, seen := c(r); !ok {
				return false, seen
			}
		}
		return true, ""
	}
}

func exists(kind, name string) condition {
	return func(r *recorder) (bool, string) {
		return r.get(kind, name) != nil, kind + " " + name + " not seen"
	}
}

func gone(kind, name string) condition {
	return func(r *recorder) (bool, string) {
		if o := r.get(kind, name); o != nil {
			return false, kind + " " + name + " still there: " + stateView(kind, o)
		}
		return true, ""
	}
}

func num(u *unstructured.Unstructured, path ...string) int64 {
	v, _, _ := unstructured.NestedInt64(u.Object, path...)
	return v
}

// observed reports whether the controller has seen u's latest generation.
func observed(u *unstructured.Unstructured) bool {
	return num(u, "status", "observedGeneration") >= u.GetGeneration()
}

// deploymentDone is kubectl rollout status's test: every replica updated
// and available, no old one left.
func deploymentDone(name string, replicas int64) condition {
	return func(r *recorder) (bool, string) {
		d := r.get("Deployment", name)
		if d == nil {
			return false, "no deployment " + name
		}
		ok := observed(d) && num(d, "status", "updatedReplicas") == replicas && num(d, "status", "replicas") == replicas &&
			num(d, "status", "availableReplicas") == replicas
		return ok, stateView("Deployment", d)
	}
}

func replicaSetDone(name string, replicas int64) condition {
	return func(r *recorder) (bool, string) {
		rs := r.get("ReplicaSet", name)
		if rs == nil {
			return false, "no replicaset " + name
		}
		ok := observed(rs) && num(rs, "status", "replicas") == replicas && num(rs, "status", "readyReplicas") == replicas &&
			num(rs, "status", "availableReplicas") == replicas
		return ok, stateView("ReplicaSet", rs)
	}
}

func daemonSetDone(name string, nodes int64) condition {
	return func(r *recorder) (bool, string) {
		ds := r.get("DaemonSet", name)
		if ds == nil {
			return false, "no daemonset " + name
		}
		ok := observed(ds) && num(ds, "status", "desiredNumberScheduled") == nodes && num(ds, "status", "numberReady") == nodes &&
			num(ds, "status", "updatedNumberScheduled") == nodes && num(ds, "status", "numberAvailable") == nodes
		return ok, stateView("DaemonSet", ds)
	}
}

func statefulSetDone(name string, replicas int64) condition {
	return func(r *recorder) (bool, string) {
		ss := r.get("StatefulSet", name)
		if ss == nil {
			return false, "no statefulset " + name
		}
		ok := observed(ss) && num(ss, "status", "readyReplicas") == replicas && num(ss, "status", "availableReplicas") == replicas &&
			num(ss, "status", "updatedReplicas") == replicas
		return ok, stateView("StatefulSet", ss)
	}
}

func jobCondition(name, typ string) condition {
	return func(r *recorder) (bool, string) {
		j := r.get("Job", name)
		if j == nil {
			return false, "no job " + name
		}
		conds, _, _ := unstructured.NestedSlice(j.Object, "status", "conditions")
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["type"] == typ && m["status"] == "True" {
				return true, ""
			}
		}
		return false, stateView("Job", j)
	}
}

// podsRunning holds when exactly n pods exist and all are Running and
// none is being deleted.
func podsRunning(n int) condition {
	return func(r *recorder) (bool, string) {
		pods := r.list("Pod")
		running := 0
		var seen []string
		for _, p := range pods {
			phase, _, _ := unstructured.NestedString(p.Object, "status", "phase")
			if phase == "Running" && p.GetDeletionTimestamp() == nil {
				running++
			}
			seen = append(seen, p.GetName()+" "+phase)
		}
		return running == n && len(pods) == n, fmt.Sprintf("pods: %v", seen)
	}
}

// sliceEndpoints holds when the service's EndpointSlices hold n ready
// endpoints in all.
func sliceEndpoints(service string, n int) condition {
	return func(r *recorder) (bool, string) {
		ready := 0
		var seen []string
		for _, s := range r.list("EndpointSlice") {
			if s.GetLabels()["kubernetes.io/service-name"] != service {
				continue
			}
			eps, _, _ := unstructured.NestedSlice(s.Object, "endpoints")
			for _, e := range eps {
				if ok, _, _ := unstructured.NestedBool(e.(map[string]any), "conditions", "ready"); ok {
					ready++
				}
			}
			seen = append(seen, stateView("EndpointSlice", s))
		}
		return ready == n, fmt.Sprintf("%d ready endpoints in %v", ready, seen)
	}
}

// scenarioRun is one scenario on one cluster. Its operations stop at the
// first error, which ends the recording.
type scenarioRun struct {
	c     *cluster
	ns    string
	rec   *recorder
	lines []string
	err   error
	ctx   context.Context
	// awaited are the scenario's own changes the watch must show before
	// the step can settle.
	awaited []awaited
}

type awaited struct {
	kind, name string
	generation int64
	deleting   bool
}

// await notes a change of the scenario's own for the next settle.
func (r *scenarioRun) await(kind string, u *unstructured.Unstructured, deleting bool) {
	if u != nil {
		r.awaited = append(r.awaited, awaited{kind: kind, name: u.GetName(), generation: u.GetGeneration(), deleting: deleting})
	}
}

// runScenario runs sc in a new namespace of c and returns its recording.
func runScenario(ctx context.Context, c *cluster, sc controllerScenario, ns string) []string {
	r := &scenarioRun{c: c, ns: ns, ctx: ctx}
	_, err := c.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		return []string{"create namespace: " + err.Error()}
	}
	if r.rec, err = startRecorder(ctx, c.dynamic, ns, sc.kinds); err != nil {
		return []string{err.Error()}
	}
	// Pods are admitted once the namespace's default service account
	// exists; a controller makes it.
	cond := exists("ServiceAccount", "default")
	if slices.Contains(sc.kinds, "ConfigMap") {
		// The root CA publisher's config map comes with the namespace
		// too; waiting for it keeps a slow publisher from moving it into
		// the scenario's first step.
		cond = all(cond, exists("ConfigMap", "kube-root-ca.crt"))
	}
	err = r.settle("namespace created", cond, "ServiceAccount")
	if err == nil {
		err = sc.run(r)
	}
	if err == nil {
		err = r.err
	}
	if err != nil {
		r.lines = append(r.lines, "stopped: "+r.rec.names.text(err.Error()))
	}
	return append(r.lines, r.rec.finish()...)
}

// settle waits until cond holds and no watch event has come for
// quietPeriod, then records the step. extra are kinds to watch for cond
// only (the default service account), not recorded.
func (r *scenarioRun) settle(step string, cond condition, extra ...string) error {
	if r.err != nil {
		return r.err
	}
	rec := r.rec
	if len(extra) > 0 {
		// A short-lived watch on what the scenario does not record.
		w, err := startRecorder(r.ctx, r.c.dynamic, r.ns, extra)
		if err != nil {
			return err
		}
		defer w.stop()
		rec = w
	}
	deadline := time.Now().Add(settleTimeout)
	var seen string
	for {
		var ok bool
		ok, seen = cond(rec)
		for _, a := range r.awaited {
			if !r.rec.reached(a.kind, a.name, a.generation, a.deleting) {
				ok, seen = false, fmt.Sprintf("the watch has not shown %s %s at generation %d yet", a.kind, a.name, a.generation)
			}
		}
		if ok && r.rec.quietFor(quietPeriod) && !podsDeleting(r.rec) {
			r.awaited = nil
			break
		}
		if time.Now().After(deadline) {
			// What happened until then is recorded all the same.
			r.lines = append(r.lines, "step: "+step+" (not settled)")
			r.lines = append(r.lines, r.rec.step()...)
			return fmt.Errorf("step %q did not settle within %v: %s", step, settleTimeout, seen)
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.lines = append(r.lines, "step: "+step)
	r.lines = append(r.lines, r.rec.step()...)
	return nil
}

// podsDeleting reports whether a pod is being deleted: a step is settled
// once terminating pods are gone.
func podsDeleting(r *recorder) bool {
	for _, p := range r.list("Pod") {
		if p.GetDeletionTimestamp() != nil {
			return true
		}
	}
	return false
}

func (r *scenarioRun) fail(what string, err error) {
	if r.err == nil && err != nil {
		r.err = fmt.Errorf("%s: %w", what, err)
	}
}

// resource is the client of a kind's objects in the scenario's namespace,
// or of the cluster-scoped kind's.
func (r *scenarioRun) resource(kind string) dynamic.ResourceInterface {
	info := watchedKinds[kind]
	if !info.namespaced {
		return r.c.dynamic.Resource(info.gvr)
	}
	return r.c.dynamic.Resource(info.gvr).Namespace(r.ns)
}

// create creates the object of a JSON or YAML manifest.
func (r *scenarioRun) create(manifest string) {
	if r.err != nil {
		return
	}
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		r.fail("manifest", err)
		return
	}
	u := &unstructured.Unstructured{Object: obj}
	got, err := r.resource(u.GetKind()).Create(r.ctx, u, metav1.CreateOptions{})
	r.fail("create "+u.GetKind()+" "+u.GetName(), err)
	if slices.Contains(r.rec.kinds, u.GetKind()) {
		r.await(u.GetKind(), got, false)
	}
}

// patch applies a JSON merge patch.
func (r *scenarioRun) patch(kind, name, patch string) {
	if r.err != nil {
		return
	}
	got, err := r.resource(kind).Patch(r.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	r.fail("patch "+kind+" "+name, err)
	r.await(kind, got, false)
}

// delete deletes an object with a propagation policy ("" for the kind's
// default).
func (r *scenarioRun) delete(kind, name, policy string) {
	if r.err != nil {
		return
	}
	opts := metav1.DeleteOptions{}
	if policy != "" {
		p := metav1.DeletionPropagation(policy)
		opts.PropagationPolicy = &p
	}
	err := r.resource(kind).Delete(r.ctx, name, opts)
	r.fail("delete "+kind+" "+name, err)
	r.awaited = append(r.awaited, awaited{kind: kind, name: name, deleting: true})
}

func (r *scenarioRun) deleteNamespace() {
	if r.err != nil {
		return
	}
	err := r.c.client.CoreV1().Namespaces().Delete(r.ctx, r.ns, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		err = errors.New("namespace already gone")
	}
	r.fail("delete namespace", err)
	r.awaited = append(r.awaited, awaited{kind: "Namespace", name: r.ns, deleting: true})
}

// kubectl runs kubectl in the scenario's namespace, on kind/name, and
// awaits the object's new generation.
func (r *scenarioRun) kubectl(kind, name string, args ...string) {
	if r.err != nil {
		return
	}
	cmd := exec.CommandContext(r.ctx, "kubectl", append([]string{"--kubeconfig", r.c.kubeconfig, "-n", r.ns}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+r.c.dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		r.fail("kubectl "+strings.Join(args, " "), fmt.Errorf("%v: %s", err, out.String()))
		return
	}
	got, err := r.resource(kind).Get(r.ctx, name, metav1.GetOptions{})
	r.fail("get "+kind+" "+name, err)
	r.await(kind, got, false)
}
