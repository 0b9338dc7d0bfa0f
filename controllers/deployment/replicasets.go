package deployment

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	// Imported under this name because the package has a revision
	// function of its own.
	controllerrevision "github.com/kubegate/kubegate/controllers/revision"
)

// The annotations a Deployment's ReplicaSets carry (G.3).
const (
	// RevisionAnnotation numbers a ReplicaSet's template among the
	// Deployment's, and the Deployment's current one.
	RevisionAnnotation = "deployment.kubernetes.io/revision"
	// RevisionHistoryAnnotation lists the earlier revisions a ReplicaSet
	// had, when a rollback made its template current again.
	RevisionHistoryAnnotation = "deployment.kubernetes.io/revision-history"
	// DesiredReplicasAnnotation is the Deployment's replicas when the
	// ReplicaSet was last scaled.
	DesiredReplicasAnnotation = "deployment.kubernetes.io/desired-replicas"
	// MaxReplicasAnnotation is the Deployment's replicas plus its surge
	// when the ReplicaSet was last scaled.
	MaxReplicasAnnotation = "deployment.kubernetes.io/max-replicas"

	// deprecatedRollbackTo is extensions/v1beta1's rollback request,
	// never copied to ReplicaSets.
	deprecatedRollbackTo = "deprecated.deployment.rollback.to"
	// maxRevisionHistoryChars bounds the revision-history annotation.
	maxRevisionHistoryChars = 2000
)

// skipAnnotation reports whether a Deployment's annotation key stays off
// its ReplicaSets: those the controller sets itself, and kubectl's last
// applied configuration.
func skipAnnotation(key string) bool {
	switch key {
	case corev1.LastAppliedConfigAnnotation, RevisionAnnotation, RevisionHistoryAnnotation,
		DesiredReplicasAnnotation, MaxReplicasAnnotation, deprecatedRollbackTo:
		return true
	}
	return false
}

// PodTemplateHash is the value of the pod-template-hash label for a
// template and the Deployment's collision count, so that the names
// kubegate gives ReplicaSets are the ones kube-controller-manager gives
// them (the hash the DaemonSet controller's names and labels carry too).
func PodTemplateHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	return controllerrevision.TemplateHash(template, collisionCount)
}

// replicaSetName is DEPLOYMENT-HASH, the Deployment's name cut short
// enough for the whole to be a DNS subdomain.
func replicaSetName(deployment, hash string) string {
	if limit := validation.DNS1123SubdomainMaxLength - 1 - len(hash); len(deployment) > limit && limit > 0 {
		deployment = deployment[:limit]
	}
	return deployment + "-" + hash
}

// withLabel returns a copy of m with key set to value.
func withLabel(m map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	out[key] = value
	return out
}

// selectorWithLabel returns a copy of s that also requires key=value.
func selectorWithLabel(s *metav1.LabelSelector, key, value string) *metav1.LabelSelector {
	if s == nil {
		return nil
	}
	out := s.DeepCopy()
	out.MatchLabels = withLabel(out.MatchLabels, key, value)
	return out
}

// equalIgnoreHash reports whether two templates are the same but for
// their pod-template-hash labels.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	delete(a.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(b.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return apiequality.Semantic.DeepEqual(a, b)
}

// byCreation orders ReplicaSets oldest first, then by name.
func byCreation(a, b *appsv1.ReplicaSet) int {
	if a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return strings.Compare(a.Name, b.Name)
	}
	if a.CreationTimestamp.Before(&b.CreationTimestamp) {
		return -1
	}
	return 1
}

// bySizeOlder orders ReplicaSets largest first, older first among equals:
// the order in which a scale-down takes from them.
func bySizeOlder(a, b *appsv1.ReplicaSet) int {
	if replicas(a) != replicas(b) {
		return int(replicas(b)) - int(replicas(a))
	}
	return byCreation(a, b)
}

// bySizeNewer orders ReplicaSets largest first, newer first among equals:
// the order in which a scale-up gives to them.
func bySizeNewer(a, b *appsv1.ReplicaSet) int {
	if replicas(a) != replicas(b) {
		return int(replicas(b)) - int(replicas(a))
	}
	return byCreation(b, a)
}

// byRevision orders ReplicaSets by revision, by creation where revisions
// are equal or unreadable.
func byRevision(a, b *appsv1.ReplicaSet) int {
	ra, errA := revision(a)
	rb, errB := revision(b)
	if errA != nil || errB != nil || ra == rb {
		return byCreation(a, b)
	}
	if ra < rb {
		return -1
	}
	return 1
}

// replicas is a ReplicaSet's spec.replicas, 1 when unset as the API
// server defaults it.
func replicas(rs *appsv1.ReplicaSet) int32 {
	if rs == nil {
		return 0
	}
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

// revision reads a ReplicaSet's revision annotation; none is 0.
func revision(o metav1.Object) (int64, error) {
	v, ok := o.GetAnnotations()[RevisionAnnotation]
	if !ok {
		return 0, nil
	}
	return strconv.ParseInt(v, 10, 64)
}

// maxRevision is the highest readable revision among rss.
func maxRevision(rss []*appsv1.ReplicaSet) int64 {
	var m int64
	for _, rs := range rss {
		if v, err := revision(rs); err == nil && v > m {
			m = v
		}
	}
	return m
}

// findNew returns the ReplicaSet of rss whose template is d's (the oldest
// if several are), or nil.
func findNew(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	sorted := slices.Clone(rss)
	slices.SortFunc(sorted, byCreation)
	for _, rs := range sorted {
		if equalIgnoreHash(&rs.Spec.Template, &d.Spec.Template) {
			return rs
		}
	}
	return nil
}

// findOld returns every ReplicaSet of rss but the new one.
func findOld(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	newRS := findNew(d, rss)
	var old []*appsv1.ReplicaSet
	for _, rs := range rss {
		if newRS == nil || rs.UID != newRS.UID {
			old = append(old, rs)
		}
	}
	return old
}

// active returns the ReplicaSets of rss with replicas, skipping nils.
func active(rss []*appsv1.ReplicaSet) []*appsv1.ReplicaSet {
	var out []*appsv1.ReplicaSet
	for _, rs := range rss {
		if rs != nil && replicas(rs) > 0 {
			out = append(out, rs)
		}
	}
	return out
}

// Sums over ReplicaSets, nil ones skipped.
func sumSpec(rss []*appsv1.ReplicaSet) int32 {
	var n int32
	for _, rs := range rss {
		n += replicas(rs)
	}
	return n
}

func sumStatus(rss []*appsv1.ReplicaSet, f func(*appsv1.ReplicaSetStatus) int32) int32 {
	var n int32
	for _, rs := range rss {
		if rs != nil {
			n += f(&rs.Status)
		}
	}
	return n
}

func statusReplicas(s *appsv1.ReplicaSetStatus) int32  { return s.Replicas }
func statusReady(s *appsv1.ReplicaSetStatus) int32     { return s.ReadyReplicas }
func statusAvailable(s *appsv1.ReplicaSetStatus) int32 { return s.AvailableReplicas }

// terminating sums the ReplicaSets' terminating replicas; unknown (nil)
// when a ReplicaSet its controller has seen does not report them.
func terminating(rss []*appsv1.ReplicaSet) *int32 {
	var n int32
	for _, rs := range rss {
		switch {
		case rs == nil:
		case rs.Status.ObservedGeneration == 0 && rs.Status.TerminatingReplicas == nil:
		case rs.Status.TerminatingReplicas == nil:
			return nil
		default:
			n += *rs.Status.TerminatingReplicas
		}
	}
	return &n
}

// desired is a Deployment's spec.replicas, 1 when unset.
func desired(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

func isRolling(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType
}

// fenceposts resolves maxSurge (rounded up) and maxUnavailable (rounded
// down) against replicas; both zero makes maxUnavailable 1.
func fenceposts(d *appsv1.Deployment) (surge, unavailable int32) {
	var s, u *intstr.IntOrString
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		s, u = ru.MaxSurge, ru.MaxUnavailable
	}
	zero := intstr.FromInt32(0)
	n := int(desired(d))
	sv, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(s, zero), n, true)
	if err != nil {
		sv = 0
	}
	uv, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(u, zero), n, false)
	if err != nil {
		uv = 0
	}
	if sv == 0 && uv == 0 {
		uv = 1
	}
	return clamp32(sv), clamp32(uv)
}

func clamp32(v int) int32 {
	return int32(max(min(v, math.MaxInt32), math.MinInt32))
}

// maxSurge is how many pods above replicas a rolling update may run.
func maxSurge(d *appsv1.Deployment) int32 {
	if !isRolling(d) {
		return 0
	}
	s, _ := fenceposts(d)
	return s
}

// maxUnavailable is how many of replicas a rolling update may have
// unavailable, never more than replicas.
func maxUnavailable(d *appsv1.Deployment) int32 {
	if !isRolling(d) || desired(d) == 0 {
		return 0
	}
	_, u := fenceposts(d)
	return min(u, desired(d))
}

// newReplicas is how many replicas the new ReplicaSet may have now: all
// of them with Recreate; with RollingUpdate, as many more as the surge
// leaves room for.
func newReplicas(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) (int32, error) {
	switch d.Spec.Strategy.Type {
	case appsv1.RollingUpdateDeploymentStrategyType:
		var s *intstr.IntOrString
		if d.Spec.Strategy.RollingUpdate != nil {
			s = d.Spec.Strategy.RollingUpdate.MaxSurge
		}
		surge, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(s, intstr.FromInt32(0)), int(desired(d)), true)
		if err != nil {
			return 0, err
		}
		current := sumSpec(all)
		maxTotal := desired(d) + clamp32(surge)
		if current >= maxTotal {
			return replicas(newRS), nil
		}
		up := min(maxTotal-current, desired(d)-replicas(newRS))
		return replicas(newRS) + up, nil
	case appsv1.RecreateDeploymentStrategyType:
		return desired(d), nil
	}
	return 0, fmt.Errorf("deployment type %v isn't supported", d.Spec.Strategy.Type)
}

// annotationInt32 reads a non-negative int32 annotation.
func annotationInt32(rs *appsv1.ReplicaSet, key string) (int32, bool) {
	v, ok := rs.Annotations[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil || n > math.MaxInt32 {
		return 0, false
	}
	return int32(n), true
}

// isSaturated reports whether rs runs all of d's replicas, available.
func isSaturated(d *appsv1.Deployment, rs *appsv1.ReplicaSet) bool {
	if rs == nil {
		return false
	}
	want, err := strconv.Atoi(rs.Annotations[DesiredReplicasAnnotation])
	if err != nil {
		return false
	}
	return replicas(rs) == desired(d) && int32(want) == desired(d) && rs.Status.AvailableReplicas == desired(d)
}

// setReplicasAnnotations records d's replicas and maximum on rs, and
// reports whether they changed.
func setReplicasAnnotations(rs *appsv1.ReplicaSet, want, maximum int32) bool {
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	changed := false
	for k, v := range map[string]string{DesiredReplicasAnnotation: strconv.Itoa(int(want)), MaxReplicasAnnotation: strconv.Itoa(int(maximum))} {
		if rs.Annotations[k] != v {
			rs.Annotations[k] = v
			changed = true
		}
	}
	return changed
}

// replicasAnnotationsStale reports whether rs's replicas annotations are
// not want and maximum.
func replicasAnnotationsStale(rs *appsv1.ReplicaSet, want, maximum int32) bool {
	return rs.Annotations[DesiredReplicasAnnotation] != strconv.Itoa(int(want)) ||
		rs.Annotations[MaxReplicasAnnotation] != strconv.Itoa(int(maximum))
}

// setNewAnnotations brings the new ReplicaSet's annotations in step: the
// Deployment's own (but for those skipped), the revision raised to
// newRevision with the old one kept in the history, and, for one about to
// be created, the replicas annotations. It reports whether anything
// changed.
func setNewAnnotations(d *appsv1.Deployment, rs *appsv1.ReplicaSet, newRevision int64, exists bool) bool {
	changed := false
	if rs.Annotations == nil {
		rs.Annotations = map[string]string{}
	}
	for k, v := range d.Annotations {
		if old, ok := rs.Annotations[k]; skipAnnotation(k) || (ok && old == v) {
			continue
		}
		rs.Annotations[k] = v
		changed = true
	}
	oldRevision, had := rs.Annotations[RevisionAnnotation]
	oldN, err := strconv.ParseInt(oldRevision, 10, 64)
	if err != nil {
		if oldRevision != "" {
			return false
		}
		oldN = 0
	}
	if oldN < newRevision {
		rs.Annotations[RevisionAnnotation] = strconv.FormatInt(newRevision, 10)
		changed = true
		if had {
			appendRevisionHistory(rs, oldRevision)
		}
	}
	if !exists && setReplicasAnnotations(rs, desired(d), desired(d)+maxSurge(d)) {
		changed = true
	}
	return changed
}

// appendRevisionHistory adds old to rs's revision history, dropping the
// earliest entries to keep it within maxRevisionHistoryChars.
func appendRevisionHistory(rs *appsv1.ReplicaSet, old string) {
	history := rs.Annotations[RevisionHistoryAnnotation]
	if history == "" {
		rs.Annotations[RevisionHistoryAnnotation] = old
		return
	}
	entries := strings.Split(history, ",")
	total := len(history) + len(old) + 1
	start := 0
	for total > maxRevisionHistoryChars && start < len(entries) {
		total -= len(entries[start]) + 1
		start++
	}
	if total <= maxRevisionHistoryChars {
		rs.Annotations[RevisionHistoryAnnotation] = strings.Join(append(entries[start:], old), ",")
	}
}

// proportion is the share of toAdd (positive or negative) rs gets when a
// mid-rollout Deployment is scaled: its replicas in proportion to the
// Deployment's new maximum over the maximum it had when rs was last
// scaled, bounded by what is left to hand out.
func proportion(rs *appsv1.ReplicaSet, d *appsv1.Deployment, toAdd, added int32) int32 {
	if rs == nil || replicas(rs) == 0 || toAdd == 0 || toAdd == added {
		return 0
	}
	fraction := fraction(rs, d)
	allowed := toAdd - added
	if toAdd > 0 {
		return min(fraction, allowed)
	}
	return max(fraction, allowed)
}

func fraction(rs *appsv1.ReplicaSet, d *appsv1.Deployment) int32 {
	if desired(d) == 0 {
		return -replicas(rs)
	}
	maxNow := desired(d) + maxSurge(d)
	maxBefore, ok := annotationInt32(rs, MaxReplicasAnnotation)
	if !ok || maxBefore == 0 {
		maxBefore = d.Status.Replicas
		if maxBefore == 0 {
			return 0
		}
	}
	size := float64(replicas(rs)*maxNow) / float64(maxBefore)
	return int32(math.Round(size)) - replicas(rs)
}
