package nodelifecycle

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/node/topology"

	"github.com/kubegate/kubegate/controllers"
)

// The node health monitor: kube's defaults for its timings and rates
// (docs/kubernetes-behaviour.md, G.13).
const (
	DefaultMonitorPeriod          = 5 * time.Second
	DefaultGracePeriod            = 50 * time.Second
	DefaultStartupGracePeriod     = 60 * time.Second
	DefaultEvictionQPS            = 0.1
	DefaultSecondaryEvictionQPS   = 0.01
	DefaultLargeClusterThreshold  = 50
	DefaultUnhealthyZoneThreshold = 0.55
	// taintPassPeriod is how often the zones' tainting queues are served.
	taintPassPeriod = 100 * time.Millisecond
)

// The NoExecute taints the monitor puts on nodes that are not Ready.
var (
	notReadyNoExecute    = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	unreachableNoExecute = corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
)

// zoneState is a zone's health as the monitor rates it.
type zoneState string

const (
	zoneInitial           zoneState = "Initial"
	zoneNormal            zoneState = "Normal"
	zoneFullDisruption    zoneState = "FullDisruption"
	zonePartialDisruption zoneState = "PartialDisruption"
)

// health is what the monitor last saw of a node: when it last heard from
// it (its own clock, not the node's), the status it had then and the
// lease.
type health struct {
	probe  time.Time
	status *corev1.NodeStatus
	lease  *coordinationv1.Lease
}

// zoneQueue is the rate-limited queue of a zone's nodes waiting for their
// NoExecute taint.
type zoneQueue struct {
	limiter flowcontrol.RateLimiter
	nodes   []string
}

// monitor is the node health half of the controller.
type monitor struct {
	c *Controller

	mu     sync.Mutex
	known  map[string]bool
	health map[string]*health
	states map[string]zoneState
	zones  map[string]*zoneQueue
	// retry holds nodes whose pods could not all be marked not ready.
	retry map[string]bool
}

func newMonitor(c *Controller) *monitor {
	return &monitor{c: c, known: map[string]bool{}, health: map[string]*health{}, states: map[string]zoneState{},
		zones: map[string]*zoneQueue{}, retry: map[string]bool{}}
}

// run monitors node health until ctx is done, and returns once its
// taint passes have stopped too.
func (m *monitor) run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		t := time.NewTicker(taintPassPeriod)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				m.taintPass(ctx)
			}
		}
	})
	t := time.NewTicker(m.c.opts.MonitorPeriod)
	defer t.Stop()
	for {
		if err := m.pass(ctx); err != nil && ctx.Err() == nil {
			m.c.log.Warn("monitor node health", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (m *monitor) now() time.Time { return m.c.opts.Now() }

func newLimiter(qps float32) flowcontrol.RateLimiter {
	if qps <= 0 {
		return flowcontrol.NewFakeNeverRateLimiter()
	}
	return flowcontrol.NewTokenBucketRateLimiter(qps, 1)
}

// pass is one round of the monitor over every node.
func (m *monitor) pass(ctx context.Context) error {
	nodes, err := m.c.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, n := range nodes {
		seen[n.Name] = true
		zone := topology.GetZoneKey(n)
		m.mu.Lock()
		if _, ok := m.zones[zone]; !ok {
			m.zones[zone] = &zoneQueue{limiter: newLimiter(m.c.opts.EvictionQPS)}
			m.states[zone] = zoneInitial
		}
		added := !m.known[n.Name]
		m.known[n.Name] = true
		m.mu.Unlock()
		if added {
			m.nodeEvent(n, "RegisteredNode", fmt.Sprintf("Registered Node %s in Controller", n.Name))
			if _, err := m.reachable(ctx, n); err != nil {
				m.c.log.Warn("remove NoExecute taints", "node", n.Name, "err", err)
			}
		}
	}
	m.mu.Lock()
	var gone []string
	for name := range m.known {
		if !seen[name] {
			gone = append(gone, name)
			delete(m.known, name)
			delete(m.health, name)
		}
	}
	m.mu.Unlock()
	for _, name := range gone {
		m.nodeEvent(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, "RemovingNode", fmt.Sprintf("Removing Node %s from Controller", name))
	}

	byZone := map[string][]*corev1.NodeCondition{}
	for _, cached := range nodes {
		node := cached.DeepCopy()
		observed, current, err := m.updateHealth(ctx, node)
		if err != nil {
			m.c.log.Warn("update node health; no pods will be evicted", "node", node.Name, "err", err)
			continue
		}
		if _, excluded := node.Labels["node.kubernetes.io/exclude-disruption"]; !excluded {
			zone := topology.GetZoneKey(node)
			byZone[zone] = append(byZone[zone], current)
		}
		if current == nil {
			continue
		}
		m.taintForReadiness(ctx, node, observed)
		m.mu.Lock()
		retry := m.retry[node.Name]
		m.mu.Unlock()
		becameNotReady := current.Status != corev1.ConditionTrue && observed.Status == corev1.ConditionTrue
		if becameNotReady {
			m.nodeEvent(node, "NodeNotReady", fmt.Sprintf("Node %s status is now: NodeNotReady", node.Name))
		}
		if becameNotReady || (retry && observed.Status != corev1.ConditionTrue) {
			err := m.markPodsNotReady(ctx, node.Name)
			m.mu.Lock()
			m.retry[node.Name] = err != nil
			m.mu.Unlock()
			if err != nil {
				m.c.log.Warn("mark pods not ready; retrying", "node", node.Name, "err", err)
			}
			continue
		}
		m.mu.Lock()
		delete(m.retry, node.Name)
		m.mu.Unlock()
	}
	m.disruption(ctx, byZone, nodes)
	return nil
}

func (m *monitor) nodeEvent(n *corev1.Node, reason, message string) {
	if m.c.recorder == nil {
		return
	}
	ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}
	m.c.recorder.Event(ref, corev1.EventTypeNormal, reason, message)
}

func readyCondition(st *corev1.NodeStatus) *corev1.NodeCondition {
	if st == nil {
		return nil
	}
	for i := range st.Conditions {
		if st.Conditions[i].Type == corev1.NodeReady {
			return &st.Conditions[i]
		}
	}
	return nil
}

// updateHealth brings what the monitor knows of node up to date and, when
// it has heard nothing from the node (neither a new Ready heartbeat nor a
// renewed lease) for the grace period, sets its conditions Unknown. It
// returns the Ready condition as the node had it and as it is now.
func (m *monitor) updateHealth(ctx context.Context, node *corev1.Node) (corev1.NodeCondition, *corev1.NodeCondition, error) {
	now := m.now()
	m.mu.Lock()
	h := m.health[node.Name]
	m.mu.Unlock()
	current := readyCondition(&node.Status)
	var observed corev1.NodeCondition
	grace := m.c.opts.GracePeriod
	if current == nil {
		observed = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown,
			LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: node.CreationTimestamp}
		grace = m.c.opts.StartupGracePeriod
		if h == nil {
			h = &health{probe: node.CreationTimestamp.Time}
		}
		h.status = &node.Status
	} else {
		observed = *current
	}
	var saved *corev1.NodeCondition
	if h != nil {
		saved = readyCondition(h.status)
	}
	switch {
	case h == nil, saved == nil && current != nil, saved != nil && current == nil:
		h = &health{probe: now, status: &node.Status, lease: leaseOf(h)}
	case saved != nil && current != nil && !saved.LastHeartbeatTime.Equal(&current.LastHeartbeatTime):
		h = &health{probe: now, status: &node.Status, lease: h.lease}
	}
	if lease, err := m.c.leases.Leases(corev1.NamespaceNodeLease).Get(node.Name); err == nil && lease.Spec.RenewTime != nil &&
		(h.lease == nil || h.lease.Spec.RenewTime == nil || h.lease.Spec.RenewTime.Before(lease.Spec.RenewTime)) {
		h.lease = lease
		h.probe = now
	}
	defer func() {
		m.mu.Lock()
		m.health[node.Name] = h
		m.mu.Unlock()
	}()
	if !now.After(h.probe.Add(grace)) {
		return observed, current, nil
	}
	stamp := metav1.NewTime(now)
	for _, t := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
		i := slices.IndexFunc(node.Status.Conditions, func(c corev1.NodeCondition) bool { return c.Type == t })
		if i < 0 {
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: t, Status: corev1.ConditionUnknown,
				Reason: "NodeStatusNeverUpdated", Message: "Kubelet never posted node status.",
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: stamp})
			continue
		}
		if c := &node.Status.Conditions[i]; c.Status != corev1.ConditionUnknown {
			c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", stamp
		}
	}
	current = readyCondition(&node.Status)
	if current.Status == observed.Status && current.Reason == observed.Reason && current.Message == observed.Message {
		return observed, current, nil
	}
	if _, err := m.c.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		return observed, current, err
	}
	h = &health{probe: h.probe, status: &node.Status, lease: h.lease}
	return observed, current, nil
}

func leaseOf(h *health) *coordinationv1.Lease {
	if h == nil {
		return nil
	}
	return h.lease
}

// taintForReadiness queues a node that is not Ready for its NoExecute
// taint, swaps the taint at once when the node already has the other one,
// and lifts both from a node that is Ready.
func (m *monitor) taintForReadiness(ctx context.Context, node *corev1.Node, observed corev1.NodeCondition) {
	switch observed.Status {
	case corev1.ConditionFalse, corev1.ConditionUnknown:
		add, other := notReadyNoExecute, unreachableNoExecute
		if observed.Status == corev1.ConditionUnknown {
			add, other = unreachableNoExecute, notReadyNoExecute
		}
		if hasTaint(node, other) {
			if err := m.swap(ctx, node.Name, &add, &other); err != nil {
				m.c.log.Warn("swap NoExecute taint; retrying next pass", "node", node.Name, "err", err)
			}
			return
		}
		m.mu.Lock()
		q := m.zones[topology.GetZoneKey(node)]
		if q != nil && !slices.Contains(q.nodes, node.Name) {
			q.nodes = append(q.nodes, node.Name)
		}
		m.mu.Unlock()
	case corev1.ConditionTrue:
		if _, err := m.reachable(ctx, node); err != nil {
			m.c.log.Warn("remove NoExecute taints; retrying next pass", "node", node.Name, "err", err)
		}
	}
}

func hasTaint(node *corev1.Node, t corev1.Taint) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(u corev1.Taint) bool { return u.MatchTaint(&t) })
}

// reachable takes node out of its zone's queue and lifts both NoExecute
// taints, reporting whether it had one.
func (m *monitor) reachable(ctx context.Context, node *corev1.Node) (bool, error) {
	m.mu.Lock()
	if q := m.zones[topology.GetZoneKey(node)]; q != nil {
		q.nodes = slices.DeleteFunc(q.nodes, func(n string) bool { return n == node.Name })
	}
	m.mu.Unlock()
	if !hasTaint(node, notReadyNoExecute) && !hasTaint(node, unreachableNoExecute) {
		return false, nil
	}
	return true, m.swap(ctx, node.Name, nil, &notReadyNoExecute, &unreachableNoExecute)
}

// swap adds add (stamped now, unless the node has it) and removes remove
// from node's taints.
func (m *monitor) swap(ctx context.Context, name string, add *corev1.Taint, remove ...*corev1.Taint) error {
	nodes := m.c.client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		changed := false
		taints := slices.DeleteFunc(slices.Clone(node.Spec.Taints), func(t corev1.Taint) bool {
			for _, r := range remove {
				if t.MatchTaint(r) {
					changed = true
					return true
				}
			}
			return false
		})
		if add != nil && !slices.ContainsFunc(taints, func(t corev1.Taint) bool { return t.MatchTaint(add) }) {
			t := *add
			stamp := metav1.NewTime(m.now())
			t.TimeAdded = &stamp
			taints = append(taints, t)
			changed = true
		}
		if !changed {
			return nil
		}
		node.Spec.Taints = taints
		_, err = nodes.Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
}

// taintPass gives the nodes at the head of each zone's queue their
// NoExecute taint, as fast as the zone's rate allows.
func (m *monitor) taintPass(ctx context.Context) {
	m.mu.Lock()
	zones := make([]*zoneQueue, 0, len(m.zones))
	for _, q := range m.zones {
		zones = append(zones, q)
	}
	m.mu.Unlock()
	for _, q := range zones {
		for {
			m.mu.Lock()
			if len(q.nodes) == 0 || !q.limiter.TryAccept() {
				m.mu.Unlock()
				break
			}
			name := q.nodes[0]
			q.nodes = q.nodes[1:]
			m.mu.Unlock()
			if err := m.taintNow(ctx, name); err != nil && ctx.Err() == nil {
				m.c.log.Warn("add NoExecute taint; retrying", "node", name, "err", err)
				m.mu.Lock()
				if !slices.Contains(q.nodes, name) {
					q.nodes = append(q.nodes, name)
				}
				m.mu.Unlock()
				break
			}
		}
	}
}

// taintNow gives node the NoExecute taint its Ready condition calls for.
func (m *monitor) taintNow(ctx context.Context, name string) error {
	node, err := m.c.nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ready := readyCondition(&node.Status)
	if ready == nil {
		return fmt.Errorf("node %s has no Ready condition", name)
	}
	switch ready.Status {
	case corev1.ConditionFalse:
		return m.swap(ctx, name, &notReadyNoExecute, &unreachableNoExecute)
	case corev1.ConditionUnknown:
		return m.swap(ctx, name, &unreachableNoExecute, &notReadyNoExecute)
	}
	return nil // Ready again
}

// markPodsNotReady sets the Ready condition of every pod on node false.
func (m *monitor) markPodsNotReady(ctx context.Context, node string) error {
	pods, err := controllers.PodsOnNode(m.c.pods, node)
	if err != nil {
		return err
	}
	var errs []error
	for _, cached := range pods {
		i := slices.IndexFunc(cached.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady })
		if cached.Spec.NodeName != node || i < 0 || cached.Status.Conditions[i].Status == corev1.ConditionFalse {
			continue
		}
		pod := cached.DeepCopy()
		c := &pod.Status.Conditions[i]
		c.Status, c.LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(m.now())
		if _, err := m.c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		if m.c.recorder != nil {
			m.c.recorder.Event(pod, corev1.EventTypeWarning, "NodeNotReady", "Node is not ready")
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d pods: %w", len(errs), errs[0])
	}
	return nil
}

// zoneStateOf rates a zone from its nodes' Ready conditions.
func (m *monitor) zoneStateOf(conds []*corev1.NodeCondition) zoneState {
	ready, notReady := 0, 0
	for _, c := range conds {
		if c != nil && c.Status == corev1.ConditionTrue {
			ready++
		} else {
			notReady++
		}
	}
	switch {
	case ready == 0 && notReady > 0:
		return zoneFullDisruption
	case notReady > 2 && float32(notReady)/float32(notReady+ready) >= m.c.opts.UnhealthyZoneThreshold:
		return zonePartialDisruption
	}
	return zoneNormal
}

// disruption sets each zone's tainting rate from its state: the normal
// rate, a reduced one (none in a small cluster) in partial disruption;
// and when every zone is fully disrupted, which looks more like the
// control plane losing the nodes than the nodes failing, it stops tainting
// and lifts the NoExecute taints of every node.
func (m *monitor) disruption(ctx context.Context, byZone map[string][]*corev1.NodeCondition, nodes []*corev1.Node) {
	next := map[string]zoneState{}
	allFull := true
	for zone, conds := range byZone {
		next[zone] = m.zoneStateOf(conds)
		if next[zone] != zoneFullDisruption {
			allFull = false
		}
	}
	m.mu.Lock()
	wasFull := true
	for zone, st := range m.states {
		if _, ok := byZone[zone]; !ok {
			delete(m.states, zone)
			continue
		}
		if st != zoneFullDisruption {
			wasFull = false
		}
	}
	m.mu.Unlock()
	if allFull && wasFull {
		return
	}
	if allFull {
		m.c.log.Info("every node is not Ready: no node is tainted NoExecute until one is")
		for _, n := range nodes {
			if _, err := m.reachable(ctx, n); err != nil {
				m.c.log.Warn("remove NoExecute taints", "node", n.Name, "err", err)
			}
		}
		m.mu.Lock()
		for zone := range m.states {
			m.zones[zone].limiter = newLimiter(0)
			m.states[zone] = zoneFullDisruption
		}
		m.mu.Unlock()
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if wasFull {
		now := m.now()
		for _, h := range m.health {
			h.probe = now
		}
	}
	for zone, st := range m.states {
		if !wasFull && st == next[zone] {
			continue
		}
		m.zones[zone].limiter = newLimiter(m.rate(next[zone], len(byZone[zone])))
		m.states[zone] = next[zone]
	}
}

// rate is the tainting rate of a zone of size nodes in state st.
func (m *monitor) rate(st zoneState, size int) float32 {
	switch st {
	case zonePartialDisruption:
		if size <= m.c.opts.LargeClusterThreshold {
			return 0
		}
		return m.c.opts.SecondaryEvictionQPS
	default:
		return m.c.opts.EvictionQPS
	}
}
