package replicaset

import (
	"math"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubegate/kubegate/controllers"
)

// podDeletionCost is the annotation by which a pod asks to be deleted
// before (lower) or after (higher) its siblings.
const podDeletionCost = "controller.kubernetes.io/pod-deletion-cost"

// phaseOrder ranks phases for deletion: Pending before Unknown before
// Running; any other phase counts as Pending.
var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// isActive reports whether a pod counts as a replica: not being deleted,
// not Succeeded or Failed.
func isActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// isTerminating reports whether a pod is being deleted and has not
// finished.
func isTerminating(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp != nil
}

// untilAvailable returns how long until a ready pod becomes available, or
// false when it is not waiting to.
func untilAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) (time.Duration, bool) {
	if !controllers.PodReady(p) || minReadySeconds <= 0 {
		return 0, false
	}
	c := controllers.PodReadyCondition(p)
	if c.LastTransitionTime.IsZero() {
		return 0, false
	}
	d := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
	return d, d > 0
}

// deletionCost reads a pod's deletion cost: a 32-bit integer without a
// plus sign or leading zeros; anything else costs 0.
func deletionCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[podDeletionCost]
	if !ok || v == "" {
		return 0
	}
	if v[0] == '+' || (v[0] == '0' && v != "0") {
		return 0
	}
	i, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(i)
}

// readySince is when a ready pod became ready; zero for a pod that is not.
func readySince(p *corev1.Pod) time.Time {
	if c := controllers.PodReadyCondition(p); c != nil && c.Status == corev1.ConditionTrue {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

// restarts returns the highest restart count of a pod's containers and of
// its sidecars (init containers that always restart).
func restarts(p *corev1.Pod) (containers, sidecars int32) {
	for _, c := range p.Status.ContainerStatuses {
		containers = max(containers, c.RestartCount)
	}
	side := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			side[c.Name] = true
		}
	}
	for _, c := range p.Status.InitContainerStatuses {
		if side[c.Name] {
			sidecars = max(sidecars, c.RestartCount)
		}
	}
	return containers, sidecars
}

// ranked sorts pods so that those to delete first come first, as kube's
// controllers choose (docs/kubernetes-behaviour.md, G.2). rank[i] is how
// many active pods of the owner's family share pods[i]'s node.
type ranked struct {
	pods []*corev1.Pod
	rank []int
	now  time.Time
}

func (s ranked) Len() int { return len(s.pods) }

func (s ranked) Swap(i, j int) {
	s.pods[i], s.pods[j] = s.pods[j], s.pods[i]
	s.rank[i], s.rank[j] = s.rank[j], s.rank[i]
}

// Less reports whether pods[i] should go before pods[j]:
//  1. unassigned before assigned;
//  2. Pending before Unknown before Running;
//  3. not ready before ready;
//  4. lower deletion cost before higher;
//  5. more family pods on the same node before fewer;
//  6. both ready: ready more recently before ready longer;
//  7. more container restarts before fewer (then more sidecar restarts);
//  8. created more recently before created earlier.
//
// Times in 6 and 8 are compared by the base-2 logarithm of their age, ties
// broken by UID; a zero time comes first.
func (s ranked) Less(i, j int) bool {
	a, b := s.pods[i], s.pods[j]
	if a.Spec.NodeName != b.Spec.NodeName && (a.Spec.NodeName == "" || b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := phaseOrder[a.Status.Phase], phaseOrder[b.Status.Phase]; pa != pb {
		return pa < pb
	}
	if ra, rb := controllers.PodReady(a), controllers.PodReady(b); ra != rb {
		return !ra
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if s.rank[i] != s.rank[j] {
		return s.rank[i] > s.rank[j]
	}
	if controllers.PodReady(a) && controllers.PodReady(b) {
		if ta, tb := readySince(a), readySince(b); !ta.Equal(tb) {
			return s.newer(a, b, ta, tb)
		}
	}
	ca, sa := restarts(a)
	cb, sb := restarts(b)
	if ca != cb {
		return ca > cb
	}
	if sa != sb {
		return sa > sb
	}
	if ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time; !ta.Equal(tb) {
		return s.newer(a, b, ta, tb)
	}
	return false
}

// newer reports whether ta (a's time) goes first against tb: the zero
// time first, then the younger by logarithmic age, then the lower UID.
func (s ranked) newer(a, b *corev1.Pod, ta, tb time.Time) bool {
	if s.now.IsZero() || ta.IsZero() || tb.IsZero() {
		if ta.IsZero() || tb.IsZero() {
			return ta.IsZero()
		}
		return ta.After(tb)
	}
	if d := logAge(ta, s.now) - logAge(tb, s.now); d != 0 {
		return d < 0
	}
	return a.UID < b.UID
}

// logAge is the base-2 logarithm of t's age in nanoseconds at now, -1 for
// no age.
func logAge(t, now time.Time) int64 {
	if d := now.Sub(t); d > 0 {
		return int64(math.Log2(float64(d)))
	}
	return -1
}

// podsToDelete returns the n of pods to delete first; family are the
// active and inactive pods of every object controlled by the same owner
// as the one scaling down, which rank pods by how crowded their node is.
func podsToDelete(pods, family []*corev1.Pod, n int, now time.Time) []*corev1.Pod {
	if n >= len(pods) {
		return pods
	}
	onNode := map[string]int{}
	for _, p := range family {
		if isActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	s := ranked{pods: append([]*corev1.Pod(nil), pods...), rank: make([]int, len(pods)), now: now}
	for i, p := range s.pods {
		s.rank[i] = onNode[p.Spec.NodeName]
	}
	sort.Sort(s)
	return s.pods[:n]
}
