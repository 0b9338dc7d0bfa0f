// Package scheduler is kubegate's scheduler: an API client that watches
// unscheduled pods with its scheduler name and the nodes, places each pod
// with kube-scheduler's filter-and-score model (package framework, default
// plugins in package plugins), binds it through pods/NAME/binding, and
// keeps the explanation of every decision on the pod (annotation
// explain.AnnotationKey, a Scheduled or FailedScheduling event).
//
// It needs what system:kube-scheduler may do: get/list/watch pods and
// nodes (and services, replicasets, statefulsets, replicationcontrollers
// for default spreading), create pods/binding, patch pods/status, create
// events.
package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegate/kubegate/internal/cachetrim"
	"k8s.io/utils/clock"

	"github.com/kubegate/kubegate/scheduler/explain"
	"github.com/kubegate/kubegate/scheduler/framework"
	"github.com/kubegate/kubegate/scheduler/plugins"
)

// MaxInFlight is how many pods may be binding (or having their failure
// reported) at once; the scheduler places the next pod when one finishes.
// It stays under the 250 concurrent streams a Go or kube-apiserver HTTP/2
// server allows on one connection, with room for the watches.
const MaxInFlight = 128

// Config configures a Scheduler.
type Config struct {
	Client kubernetes.Interface
	// EventClient records the Scheduled and FailedScheduling events; nil
	// means Client. kube-scheduler records them with a client of their
	// own, so that its events do not share the bindings' rate limit.
	EventClient kubernetes.Interface
	// Profile is what the scheduler runs; its SchedulerName picks the pods
	// it handles.
	Profile framework.Profile
	// Logger receives status lines; nil means slog.Default().
	Logger *slog.Logger
	// LogWriter, when set, receives kube-scheduler-shaped klog lines for
	// every attempt at Verbosity (2, 5 or 10; see explain.LogLines).
	LogWriter io.Writer
	Verbosity int
	// Clock drives backoff; nil means the real clock.
	Clock clock.WithTicker
	// InitialBackoff and MaxBackoff: zero means 1 s and 10 s.
	InitialBackoff, MaxBackoff time.Duration
	// IntN breaks ties; nil means math/rand/v2.
	IntN func(int) int
	// Factory is the informer factory to use (so that NewSpreadSources
	// shares it); nil means a new one.
	Factory informers.SharedInformerFactory
}

// Scheduler schedules pods; create it with New, start it with Run.
type Scheduler struct {
	cfg     Config
	name    string
	fw      *framework.Framework
	queue   *Queue
	factory informers.SharedInformerFactory
	pods    corelisters.PodLister
	synced  []cache.InformerSynced
	log     *slog.Logger
	clock   clock.WithTicker

	mu   sync.Mutex // guards snap and fw
	snap *framework.Snapshot
	wg   sync.WaitGroup // bindings and status updates in flight
	// inflight holds a token per binding or failure report in flight.
	inflight chan struct{}
}

// New builds a scheduler and registers its informers; nothing runs until
// Run.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("scheduler: no API client")
	}
	fw, err := framework.New(cfg.Profile)
	if err != nil {
		return nil, err
	}
	fw.IntN = cfg.IntN
	s := &Scheduler{cfg: cfg, fw: fw, name: fw.Profile().SchedulerName, log: cfg.Logger, clock: cfg.Clock,
		snap: framework.NewSnapshot(nil, nil), inflight: make(chan struct{}, MaxInFlight)}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.clock == nil {
		s.clock = clock.RealClock{}
	}
	s.queue = NewQueue(s.clock, cfg.InitialBackoff, cfg.MaxBackoff)
	s.factory = cfg.Factory
	if s.factory == nil {
		s.factory = NewInformerFactory(cfg.Client)
	}
	podInf := s.factory.Core().V1().Pods()
	s.pods = podInf.Lister()
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onPod(obj.(*v1.Pod)) },
		UpdateFunc: func(_, obj any) { s.onPod(obj.(*v1.Pod)) },
		DeleteFunc: s.onPodDelete,
	}); err != nil {
		return nil, err
	}
	s.synced = append(s.synced, podInf.Informer().HasSynced, s.factory.Core().V1().Nodes().Informer().HasSynced)
	if _, err := s.factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.onNode(obj.(*v1.Node)) },
		UpdateFunc: func(_, obj any) { s.onNode(obj.(*v1.Node)) },
		DeleteFunc: s.onNodeDelete,
	}); err != nil {
		return nil, err
	}
	for _, fp := range cfg.Profile.Filters {
		if vb, ok := fp.(*plugins.VolumeBinding); ok {
			if vs, ok := vb.Sources.(*volumeSources); ok {
				synced, err := vs.watch(s.queue.MoveAllToActiveOrBackoff)
				if err != nil {
					return nil, err
				}
				s.synced = append(s.synced, synced...)
			}
		}
	}
	return s, nil
}

// Queue exposes the scheduling queue (for status and tests).
func (s *Scheduler) Queue() *Queue { return s.queue }

func terminal(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

func (s *Scheduler) onPod(p *v1.Pod) {
	switch {
	case p.Spec.NodeName != "" && !terminal(p):
		s.mu.Lock()
		s.snap.AddPod(p)
		s.mu.Unlock()
		s.queue.Done(p.UID)
	case p.Spec.NodeName != "":
		s.forgetPod(p.UID)
	case p.Spec.SchedulerName == s.name && p.DeletionTimestamp == nil:
		s.queue.Add(p)
	}
}

func (s *Scheduler) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	p, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	s.queue.Delete(p.UID)
	s.forgetPod(p.UID)
}

// forgetPod removes an assigned pod; the room it frees may fit waiting pods.
func (s *Scheduler) forgetPod(uid types.UID) {
	s.mu.Lock()
	_, had := s.snap.HasPod(uid)
	s.snap.RemovePod(uid)
	s.mu.Unlock()
	if had {
		s.queue.MoveAllToActiveOrBackoff()
	}
}

func (s *Scheduler) onNode(n *v1.Node) {
	s.mu.Lock()
	s.snap.SetNode(n)
	s.mu.Unlock()
	s.queue.MoveAllToActiveOrBackoff()
}

func (s *Scheduler) onNodeDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if n, ok := obj.(*v1.Node); ok {
		s.mu.Lock()
		s.snap.RemoveNode(n.Name)
		s.mu.Unlock()
	}
}

// Run starts the informers, waits for their caches, and schedules until
// ctx ends; it then waits for bindings in flight.
func (s *Scheduler) Run(ctx context.Context) error {
	s.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		return fmt.Errorf("scheduler: pod and node caches did not sync: %w", ctx.Err())
	}
	s.log.Info("scheduler started", "schedulerName", s.name)
	go func() {
		t := s.clock.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				s.queue.FlushBackoff()
			}
		}
	}()
	for s.ScheduleOne(ctx) {
	}
	s.wg.Wait()
	s.factory.Shutdown()
	return nil
}

// ScheduleOne takes the next pod from the queue and tries to place it. The
// binding (or the failure report) continues in the background; while
// MaxInFlight of them are, it waits. It returns false when ctx ended.
func (s *Scheduler) ScheduleOne(ctx context.Context) bool {
	// Wait for room among the API calls in flight. Unbounded, they would
	// outrun the server's concurrent streams on one HTTP/2 connection, and
	// client-go would open (and handshake) one connection after another.
	select {
	case s.inflight <- struct{}{}:
	case <-ctx.Done():
		return false
	}
	pod, _, ok := s.queue.Pop(ctx)
	if !ok {
		<-s.inflight
		return false
	}
	// The queue may hold an older copy; skip pods that were bound or
	// deleted meanwhile.
	if cur, err := s.pods.Pods(pod.Namespace).Get(pod.Name); err != nil || cur.UID != pod.UID || cur.Spec.NodeName != "" || cur.DeletionTimestamp != nil {
		s.queue.Done(pod.UID)
		<-s.inflight
		return true
	} else {
		pod = cur
	}
	s.mu.Lock()
	res, err := s.fw.Schedule(ctx, s.snap, pod)
	var assumed *v1.Pod
	var chosen *v1.Node
	if err == nil {
		assumed = pod.DeepCopy()
		assumed.Spec.NodeName = res.SelectedNode
		s.snap.AddPod(assumed)
		if ni := s.snap.Get(res.SelectedNode); ni != nil {
			chosen = ni.Node
		}
	}
	s.mu.Unlock()
	if s.cfg.LogWriter != nil && s.cfg.Verbosity > 0 {
		_ = explain.LogLines(s.cfg.LogWriter, s.clock.Now(), s.cfg.Verbosity, res, err)
	}
	e := explain.FromResult(res, err, explain.AnnotationTopNodes)
	node := res.SelectedNode
	res.Release()
	note, aerr := explain.EncodeAnnotation(e)
	msg := "Successfully assigned " + e.Pod + " to " + node
	if aerr != nil {
		s.log.Error("explain", "pod", e.Pod, "err", aerr)
	} else if err == nil {
		msg = explain.ScheduledMessage(e)
	}
	s.wg.Add(1)
	go func() {
		defer func() { <-s.inflight; s.wg.Done() }()
		if err != nil {
			s.failed(ctx, pod, err, note)
			return
		}
		s.bind(ctx, pod, assumed, chosen, node, note, msg)
	}()
	return true
}

// bind runs the profile's PreBind plugins on chosen (the Node named
// node), binds pod to node with the explanation note, then records the
// Scheduled event with msg. A failed PreBind or binding forgets the
// assumed pod and sends the pod back to the queue.
func (s *Scheduler) bind(ctx context.Context, pod, assumed *v1.Pod, chosen *v1.Node, node, note, msg string) {
	for _, pb := range s.fw.Profile().PreBinders {
		if chosen == nil {
			break
		}
		if st := pb.PreBind(ctx, pod, chosen); !st.IsSuccess() {
			s.mu.Lock()
			s.snap.RemovePod(assumed.UID)
			s.mu.Unlock()
			s.log.Error("prebind failed", "pod", pod.Namespace+"/"+pod.Name, "node", node, "plugin", pb.Name(), "err", st.Message())
			s.failed(ctx, pod, fmt.Errorf("running PreBind plugin %q: %s", pb.Name(), st.Message()), "")
			return
		}
	}
	b := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}
	if note != "" {
		b.Annotations = map[string]string{explain.AnnotationKey: note}
	}
	if err := s.cfg.Client.CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{}); err != nil {
		s.mu.Lock()
		s.snap.RemovePod(assumed.UID)
		s.mu.Unlock()
		s.log.Error("bind failed", "pod", pod.Namespace+"/"+pod.Name, "node", node, "err", err)
		s.failed(ctx, pod, fmt.Errorf("binding rejected: %w", err), "")
		return
	}
	s.queue.Done(pod.UID)
	s.event(ctx, pod, v1.EventTypeNormal, "Scheduled", msg)
}

// failed reports a pod that was not placed: PodScheduled=False (reason
// Unschedulable for a fit error, SchedulerError otherwise) with the
// message, the explanation annotation, a FailedScheduling event; then the
// pod waits in the queue.
func (s *Scheduler) failed(ctx context.Context, pod *v1.Pod, err error, note string) {
	reason := v1.PodReasonSchedulerError
	if framework.IsFitError(err) {
		reason = v1.PodReasonUnschedulable
		s.queue.Unschedulable(pod)
	} else {
		s.queue.Backoff(pod)
	}
	msg := explain.FailedMessage(err)
	patch := map[string]any{
		"status": map[string]any{"conditions": []v1.PodCondition{{
			Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: reason, Message: msg,
			LastTransitionTime: metav1.NewTime(s.clock.Now()),
		}}},
	}
	if note != "" {
		patch["metadata"] = map[string]any{"annotations": map[string]string{explain.AnnotationKey: note}}
	}
	data, _ := json.Marshal(patch)
	if _, perr := s.cfg.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{}, "status"); perr != nil {
		s.log.Error("update pod status", "pod", pod.Namespace+"/"+pod.Name, "err", perr)
	}
	s.event(ctx, pod, v1.EventTypeWarning, "FailedScheduling", msg)
}

func (s *Scheduler) event(ctx context.Context, pod *v1.Pod, typ, reason, msg string) {
	now := metav1.NewTime(s.clock.Now())
	ev := &v1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name + "." + strconv.FormatInt(now.UnixNano(), 16)},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name,
			UID: pod.UID, ResourceVersion: pod.ResourceVersion},
		Reason: reason, Message: msg, Type: typ, Count: 1,
		FirstTimestamp: now, LastTimestamp: now,
		Source:              v1.EventSource{Component: s.name},
		ReportingController: s.name, ReportingInstance: s.name,
	}
	events := s.cfg.EventClient
	if events == nil {
		events = s.cfg.Client
	}
	if _, err := events.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		s.log.Error("record event", "pod", pod.Namespace+"/"+pod.Name, "reason", reason, "err", err)
	}
}

// ExplainPod reads the explanation the scheduler left on a pod.
func ExplainPod(ctx context.Context, client kubernetes.Interface, namespace, name string) (*explain.Explanation, error) {
	p, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	v, ok := p.Annotations[explain.AnnotationKey]
	if !ok {
		return nil, fmt.Errorf("pod %s/%s has no %s annotation: it was not scheduled by kubegate's scheduler", namespace, name, explain.AnnotationKey)
	}
	return explain.ParseAnnotation(v)
}

// NewInformerFactory returns the informers a scheduler reads, which keep
// objects without their managedFields, as kube-scheduler's pod informer
// does: the scheduler never reads them, and they are a large part of a
// pod.
func NewInformerFactory(client kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(cachetrim.StripManagedFields))
}
