package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// A recording is what a scenario saw of the controllers through watches
// on its namespace: for each step, the changes every object went through
// (one entry per change of what the controllers decide: replicas,
// labels, annotations, owners, finalizers, deletion, a pod's phase), the
// order each kind's objects were created in, and, once the step has
// settled, every object with its status. At the end come the events the
// controllers reported. Everything a server generates (uids, times, IPs,
// random name suffixes, template hashes) is replaced by a placeholder, so
// two recordings of the same behaviour are the same text.

// kindInfo is a kind a scenario may watch.
type kindInfo struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}

var watchedKinds = map[string]kindInfo{
	"Deployment":         {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, true},
	"ReplicaSet":         {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, true},
	"DaemonSet":          {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, true},
	"StatefulSet":        {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, true},
	"ControllerRevision": {schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "controllerrevisions"}, true},
	"Job":                {schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, true},
	"Pod":                {schema.GroupVersionResource{Version: "v1", Resource: "pods"}, true},
	"Service":            {schema.GroupVersionResource{Version: "v1", Resource: "services"}, true},
	"Endpoints":          {schema.GroupVersionResource{Version: "v1", Resource: "endpoints"}, true},
	"EndpointSlice":      {schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}, true},
	"ConfigMap":          {schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, true},
	"ServiceAccount":     {schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, true},
	"Event":              {schema.GroupVersionResource{Version: "v1", Resource: "events"}, true},
	"Namespace":          {schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, false},
	"ValidatingAdmissionPolicy": {schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1",
		Resource: "validatingadmissionpolicies"}, false},
}

// tracked is one object seen through a watch.
type tracked struct {
	kind, name string
	obj        *unstructured.Unstructured // the latest state
	changes    []string                   // raw views, one per change, "deleted" last
	reported   int                        // how many changes earlier steps showed
}

// recorder watches a scenario's namespace.
type recorder struct {
	ns string

	mu        sync.Mutex
	objects   map[types.UID]*tracked
	created   map[string][]string // kind -> raw names, in order, this step
	lastEvent time.Time
	names     *namer
	events    map[string]bool // raw "source kind name reason: message"
	unserved  []string
	kinds     []string // the kinds watched

	stop context.CancelFunc
}

// startRecorder watches kinds (and the Namespace ns itself when listed)
// until stop is called. A kind the server does not serve is noted in the
// recording instead.
func startRecorder(ctx context.Context, client dynamic.Interface, ns string, kinds []string) (*recorder, error) {
	r := &recorder{ns: ns, objects: map[types.UID]*tracked{}, created: map[string][]string{}, names: newNamer(ns), events: map[string]bool{}}
	ctx, r.stop = context.WithCancel(ctx)
	nsFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, ns, nil)
	clusterFactory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(client, 0, "", func(o *metav1.ListOptions) {
		o.FieldSelector = "metadata.name=" + ns
	})
	var synced []cache.InformerSynced
	for _, kind := range append([]string{"Event"}, kinds...) {
		info := watchedKinds[kind]
		var probeErr error
		if info.namespaced {
			_, probeErr = client.Resource(info.gvr).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})
		} else {
			_, probeErr = client.Resource(info.gvr).List(ctx, metav1.ListOptions{Limit: 1})
		}
		if apierrors.IsNotFound(probeErr) {
			r.unserved = append(r.unserved, kind)
			continue
		}
		if probeErr != nil {
			r.stop()
			return nil, fmt.Errorf("list %s: %w", info.gvr.Resource, probeErr)
		}
		factory := nsFactory
		if !info.namespaced {
			factory = clusterFactory
		}
		inf := factory.ForResource(info.gvr).Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { r.seen(kind, o, false) },
			UpdateFunc: func(_, o any) { r.seen(kind, o, false) },
			DeleteFunc: func(o any) {
				if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
					o = d.Obj
				}
				r.seen(kind, o, true)
			},
		}); err != nil {
			r.stop()
			return nil, err
		}
		synced = append(synced, inf.HasSynced)
		r.kinds = append(r.kinds, kind)
	}
	nsFactory.Start(ctx.Done())
	clusterFactory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		r.stop()
		return nil, fmt.Errorf("watches of namespace %s did not sync", ns)
	}
	return r, nil
}

// seen records one watch event.
func (r *recorder) seen(kind string, o any, deleted bool) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastEvent = time.Now()
	r.names.learn(u)
	if kind == "Event" {
		// The scheduler is kubegate's on both clusters, and its
		// messages carry scores that depend on timing.
		if !deleted && !isSchedulerEvent(u) {
			r.events[eventLine(u)] = true
		}
		return
	}
	t := r.objects[u.GetUID()]
	if t == nil {
		t = &tracked{kind: kind, name: u.GetName()}
		r.objects[u.GetUID()] = t
		r.created[kind] = append(r.created[kind], u.GetName())
	}
	t.obj = u
	v := "deleted"
	if !deleted {
		v = changeView(kind, u)
	}
	if n := len(t.changes); n == 0 || t.changes[n-1] != v {
		t.changes = append(t.changes, v)
	}
}

// get returns the latest state of kind/name, or nil once it is deleted or
// before it is seen.
func (r *recorder) get(kind, name string) *unstructured.Unstructured {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.objects {
		if t.kind == kind && t.name == name && !t.gone() {
			return t.obj
		}
	}
	return nil
}

// reached reports whether the watch has shown kind/name at generation
// gen or later, or, with deleting, being deleted or gone: a step waits
// for it, so that it does not judge by what the watch showed before the
// step's own change.
func (r *recorder) reached(kind, name string, gen int64, deleting bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.objects {
		if t.kind != kind || t.name != name {
			continue
		}
		if deleting && (t.gone() || t.obj.GetDeletionTimestamp() != nil) {
			return true
		}
		if !deleting && !t.gone() && t.obj.GetGeneration() >= gen {
			return true
		}
	}
	return false
}

// list returns the latest states of the kind's objects that exist.
func (r *recorder) list(kind string) []*unstructured.Unstructured {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*unstructured.Unstructured
	for _, t := range r.objects {
		if t.kind == kind && !t.gone() {
			out = append(out, t.obj)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

func (t *tracked) gone() bool { return len(t.changes) > 0 && t.changes[len(t.changes)-1] == "deleted" }

// quietFor reports whether no watch event arrived for d.
func (r *recorder) quietFor(d time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Since(r.lastEvent) >= d
}

// step returns the lines of one settled step, and starts the next: the
// objects created in order per kind, each object's changes since the last
// step, and every existing object with its status.
func (r *recorder) step() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var lines []string
	kinds := make([]string, 0, len(r.created))
	for k := range r.created {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		var names []string
		for _, n := range r.created[k] {
			names = append(names, r.names.text(n))
		}
		lines = append(lines, "  created "+k+": "+strings.Join(collapseRuns(names), ", "))
	}
	r.created = map[string][]string{}

	var changed, state []string
	for _, t := range r.objects {
		name := r.names.text(t.name)
		if news := t.changes[t.reported:]; len(news) > 0 {
			var parts []string
			for i, c := range news {
				if i == 0 && t.reported == 0 {
					c = "created " + c
				}
				parts = append(parts, r.names.text(c))
			}
			changed = append(changed, "  changed "+t.kind+" "+name+": "+strings.Join(parts, " → "))
			t.reported = len(t.changes)
		}
		if !t.gone() {
			state = append(state, "  now "+t.kind+" "+name+": "+r.names.text(stateView(t.kind, t.obj)))
		}
	}
	lines = append(lines, countDuplicates(changed)...)
	return append(lines, countDuplicates(state)...)
}

// finish stops the watches and returns the closing lines: kinds not
// served, and the events reported, each once.
func (r *recorder) finish() []string {
	r.stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	var lines []string
	for _, k := range r.unserved {
		lines = append(lines, "  not served: "+k)
	}
	var events []string
	for e := range r.events {
		events = append(events, "  event "+r.names.text(e))
	}
	sort.Strings(events)
	return append(lines, compactSorted(events)...)
}

// collapseRuns writes a run of equal names once, with its length.
func collapseRuns(names []string) []string {
	var out []string
	for i := 0; i < len(names); {
		j := i
		for j < len(names) && names[j] == names[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%s ×%d", names[i], j-i))
		} else {
			out = append(out, names[i])
		}
		i = j
	}
	return out
}

// countDuplicates sorts lines and writes equal ones once, with their
// count: objects with random names that went through the same changes.
func countDuplicates(lines []string) []string {
	sort.Strings(lines)
	var out []string
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && lines[j] == lines[i] {
			j++
		}
		if j-i > 1 {
			out = append(out, fmt.Sprintf("%s (×%d)", lines[i], j-i))
		} else {
			out = append(out, lines[i])
		}
		i = j
	}
	return out
}

// compactSorted drops repeated lines of a sorted list.
func compactSorted(lines []string) []string {
	var out []string
	for i, l := range lines {
		if i == 0 || l != lines[i-1] {
			out = append(out, l)
		}
	}
	return out
}

func isSchedulerEvent(u *unstructured.Unstructured) bool {
	source, _, _ := unstructured.NestedString(u.Object, "source", "component")
	reporting, _, _ := unstructured.NestedString(u.Object, "reportingComponent")
	return source == "default-scheduler" || reporting == "default-scheduler"
}

// eventLine is what an event shows: who reported it, about what, its type,
// reason and message.
func eventLine(u *unstructured.Unstructured) string {
	source, _, _ := unstructured.NestedString(u.Object, "source", "component")
	if source == "" {
		source, _, _ = unstructured.NestedString(u.Object, "reportingComponent")
	}
	kind, _, _ := unstructured.NestedString(u.Object, "involvedObject", "kind")
	name, _, _ := unstructured.NestedString(u.Object, "involvedObject", "name")
	typ, _, _ := unstructured.NestedString(u.Object, "type")
	reason, _, _ := unstructured.NestedString(u.Object, "reason")
	msg, _, _ := unstructured.NestedString(u.Object, "message")
	return fmt.Sprintf("%s: %s %s %s %s: %s", source, kind, name, typ, reason, msg)
}

// changeView is what of an object the recording follows change by change.
func changeView(kind string, u *unstructured.Unstructured) string {
	v := metaView(u)
	switch kind {
	case "EndpointSlice", "Endpoints":
		// How many writes the endpoints take on the way depends on
		// when the controller sees each pod change; the settled state
		// shows the endpoints.
		delete(v, "generation")
		delete(v, "annotations")
	case "Deployment", "ReplicaSet", "StatefulSet":
		copyField(v, u, "replicas", "spec", "replicas")
		v["images"] = images(u, "spec", "template", "spec")
	case "Job":
		copyField(v, u, "parallelism", "spec", "parallelism")
		copyField(v, u, "completions", "spec", "completions")
		copyField(v, u, "suspend", "spec", "suspend")
	case "Pod":
		copyField(v, u, "phase", "status", "phase")
		v["ready"] = podReady(u)
	case "Namespace":
		copyField(v, u, "phase", "status", "phase")
		copyField(v, u, "spec.finalizers", "spec", "finalizers")
		copyField(v, u, "conditions", "status", "conditions")
	}
	return render(v)
}

// stateView is all of an object a settled step shows.
func stateView(kind string, u *unstructured.Unstructured) string {
	v := metaView(u)
	switch kind {
	case "Pod":
		copyField(v, u, "phase", "status", "phase")
		v["ready"] = podReady(u)
		v["images"] = images(u, "spec")
		// The tolerations of other pods are the API server's
		// (DefaultTolerationSeconds); a DaemonSet's are its controller's.
		if ref := metav1.GetControllerOf(u); ref != nil && ref.Kind == "DaemonSet" {
			copyField(v, u, "tolerations", "spec", "tolerations")
		}
		copyField(v, u, "affinity", "spec", "affinity")
		copyField(v, u, "hostname", "spec", "hostname")
		copyField(v, u, "subdomain", "spec", "subdomain")
		if n, _, _ := unstructured.NestedString(u.Object, "spec", "nodeName"); n != "" {
			v["scheduled"] = true
		}
	case "EndpointSlice":
		copyField(v, u, "addressType", "addressType")
		copyField(v, u, "ports", "ports")
		copyField(v, u, "endpoints", "endpoints")
	case "Endpoints":
		copyField(v, u, "subsets", "subsets")
	case "ConfigMap":
		if data, ok, _ := unstructured.NestedMap(u.Object, "data"); ok {
			var keys []string
			for k := range data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			v["data keys"] = keys
		}
	case "ServiceAccount":
	default:
		for _, f := range []string{"replicas", "parallelism", "completions", "backoffLimit", "suspend", "revision"} {
			copyField(v, u, f, "spec", f)
		}
		copyField(v, u, "revision", "revision")
		copyField(v, u, "status", "status")
		if kind == "Deployment" || kind == "ReplicaSet" || kind == "StatefulSet" || kind == "DaemonSet" {
			v["images"] = images(u, "spec", "template", "spec")
		}
	}
	return render(v)
}

// metaView is the metadata controllers write.
func metaView(u *unstructured.Unstructured) map[string]any {
	v := map[string]any{}
	if g := u.GetGenerateName(); g != "" {
		v["generateName"] = g
	}
	if l := u.GetLabels(); len(l) > 0 {
		v["labels"] = l
	}
	if a := u.GetAnnotations(); len(a) > 0 {
		keep := map[string]string{}
		for k, val := range a {
			// kubectl's own, and the scheduler's explanation, which is
			// the same scheduler's on both clusters and scores nodes
			// by what else runs on them.
			// The endpoints' trigger time is set or dropped by whether a
			// pod change or a service change was seen last.
			if k != "kubectl.kubernetes.io/last-applied-configuration" && !strings.HasPrefix(k, "scheduler.kubegate.io/") &&
				k != "endpoints.kubernetes.io/last-change-trigger-time" {
				keep[k] = val
			}
		}
		if len(keep) > 0 {
			v["annotations"] = keep
		}
	}
	var owners []string
	for _, o := range u.GetOwnerReferences() {
		s := o.Kind + "/" + o.Name
		if o.Controller != nil && *o.Controller {
			s += " controller"
		}
		if o.BlockOwnerDeletion != nil && *o.BlockOwnerDeletion {
			s += " blockOwnerDeletion"
		}
		owners = append(owners, s)
	}
	if owners != nil {
		v["owners"] = owners
	}
	if f := u.GetFinalizers(); len(f) > 0 {
		v["finalizers"] = f
	}
	if u.GetDeletionTimestamp() != nil {
		v["deleting"] = true
	}
	// A pod's generation is the API server's (the API comparison covers
	// it); a workload's is what its status's observedGeneration follows.
	if g := u.GetGeneration(); g != 0 && u.GetKind() != "Pod" {
		v["generation"] = g
	}
	return v
}

func copyField(v map[string]any, u *unstructured.Unstructured, as string, path ...string) {
	if f, ok, _ := unstructured.NestedFieldNoCopy(u.Object, path...); ok && f != nil {
		v[as] = f
	}
}

// images lists the containers' images of the pod spec at path.
func images(u *unstructured.Unstructured, path ...string) []string {
	cs, _, _ := unstructured.NestedSlice(u.Object, append(path, "containers")...)
	var out []string
	for _, c := range cs {
		if m, ok := c.(map[string]any); ok {
			out = append(out, fmt.Sprint(m["image"]))
		}
	}
	return out
}

func podReady(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}

// volatileKeys are the fields whose values differ from run to run.
var volatileKeys = map[string]bool{
	"lastTransitionTime": true, "lastUpdateTime": true, "lastProbeTime": true, "lastHeartbeatTime": true,
	"startTime": true, "completionTime": true, "uid": true, "resourceVersion": true,
}

// render writes a view as JSON with its volatile fields dropped, node
// names and IPs hidden, and lists of endpoints sorted (their order follows
// the pods' IPs).
func render(v map[string]any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return err.Error()
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // placeholders keep their < and >
	if err := enc.Encode(scrub("", x)); err != nil {
		return err.Error()
	}
	return strings.TrimSuffix(out.String(), "\n")
}

func scrub(key string, x any) any {
	switch x := x.(type) {
	case map[string]any:
		for k, val := range x {
			if volatileKeys[k] {
				delete(x, k)
				continue
			}
			if k == "nodeName" {
				x[k] = "<node>"
				continue
			}
			x[k] = scrub(k, val)
		}
		return x
	case string:
		// Before lists are sorted, so that they sort by what is compared.
		return recIPRE.ReplaceAllString(x, "<ip>")
	case []any:
		for i := range x {
			x[i] = scrub("", x[i])
		}
		if key == "endpoints" || key == "addresses" || key == "notReadyAddresses" {
			sort.Slice(x, func(i, j int) bool {
				a, _ := json.Marshal(x[i])
				b, _ := json.Marshal(x[j])
				return string(a) < string(b)
			})
		}
		return x
	}
	return x
}

// namer replaces what a server generates in a recording's text: names
// made from generateName become PREFIX<rand>, template and revision hashes
// <hash1>, <hash2>, … in the order they appear, uids <uid>, IPs <ip>,
// times <time>, the simulated nodes' names <node> (the scheduler's
// choice) and the scenario's namespace <namespace>.
type namer struct {
	ns        string
	generated map[string]string // name -> generateName + "<rand>"
	hashes    map[string]string // hash -> "<hashN>"
}

func newNamer(ns string) *namer {
	return &namer{ns: ns, generated: map[string]string{}, hashes: map[string]string{}}
}

var hashLabels = []string{"pod-template-hash", "controller-revision-hash", "controller.kubernetes.io/hash"}

var (
	hashRE = regexp.MustCompile(`^[a-z0-9]{5,12}$`)
	randRE = regexp.MustCompile(`^[bcdfghjklmnpqrstvwxz2456789]{5}$`)
)

func (n *namer) learn(u *unstructured.Unstructured) {
	// The API server appends 5 characters of its own alphabet; a
	// StatefulSet's pods have a generateName but are named by ordinal.
	if g := u.GetGenerateName(); g != "" && strings.HasPrefix(u.GetName(), g) && randRE.MatchString(u.GetName()[len(g):]) {
		n.generated[u.GetName()] = g + "<rand>"
	}
	for _, l := range hashLabels {
		h := u.GetLabels()[l]
		if i := strings.LastIndex(h, "-"); i >= 0 {
			h = h[i+1:]
		}
		if hashRE.MatchString(h) && n.hashes[h] == "" {
			n.hashes[h] = fmt.Sprintf("<hash%d>", len(n.hashes)+1)
		}
	}
}

var (
	recUUIDRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	recIPRE   = regexp.MustCompile(`\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b`)
	recNodeRE = regexp.MustCompile(`\bnode-\d+\b`)
	recTimeRE = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
)

func (n *namer) text(s string) string {
	s = strings.ReplaceAll(s, n.ns, "<namespace>")
	var names []string
	for name := range n.generated {
		names = append(names, name)
	}
	// Longer names first, so that a name is not replaced inside a longer
	// one that contains it.
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	for _, name := range names {
		s = strings.ReplaceAll(s, name, n.generated[name])
	}
	for h, ph := range n.hashes {
		s = strings.ReplaceAll(s, h, ph)
	}
	s = recUUIDRE.ReplaceAllString(s, "<uid>")
	s = recIPRE.ReplaceAllString(s, "<ip>")
	s = recTimeRE.ReplaceAllString(s, "<time>")
	return recNodeRE.ReplaceAllString(s, "<node>")
}
