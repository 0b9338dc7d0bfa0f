package deployment

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// newAndOld returns d's new ReplicaSet (nil if there is none and create
// is false) with its revision and annotations brought in step, and all
// the old ones; d's revision annotation follows the new ReplicaSet's.
func (c *Controller) newAndOld(ctx context.Context, d *appsv1.Deployment, rss []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, []*appsv1.ReplicaSet, error) {
	old := findOld(d, rss)
	newRS, err := c.newReplicaSet(ctx, d, rss, old, create)
	if err != nil {
		return nil, nil, err
	}
	return newRS, old, nil
}

// setRevision puts rev in d's revision annotation and reports whether it
// changed.
func setRevision(d *appsv1.Deployment, rev string) bool {
	if d.Annotations == nil {
		d.Annotations = map[string]string{}
	}
	if d.Annotations[RevisionAnnotation] == rev {
		return false
	}
	d.Annotations[RevisionAnnotation] = rev
	return true
}

func (c *Controller) newReplicaSet(ctx context.Context, d *appsv1.Deployment, rss, old []*appsv1.ReplicaSet, create bool) (*appsv1.ReplicaSet, error) {
	existing := findNew(d, rss)
	newRevision := maxRevision(old) + 1
	if existing != nil {
		rs := existing.DeepCopy()
		if setNewAnnotations(d, rs, newRevision, true) || rs.Spec.MinReadySeconds != d.Spec.MinReadySeconds {
			rs.Spec.MinReadySeconds = d.Spec.MinReadySeconds
			return c.client.AppsV1().ReplicaSets(rs.Namespace).Update(ctx, rs, metav1.UpdateOptions{})
		}
		update := setRevision(d, rs.Annotations[RevisionAnnotation])
		if hasProgressDeadline(d) && getCondition(&d.Status, appsv1.DeploymentProgressing) == nil {
			setCondition(&d.Status, newCondition(c.now(), appsv1.DeploymentProgressing, corev1.ConditionTrue,
				ReasonFoundNewReplicaSet, fmt.Sprintf("Found new replica set %q", rs.Name)))
			update = true
		}
		if update {
			if err := c.updateStatus(ctx, d); err != nil {
				return nil, err
			}
		}
		return rs, nil
	}
	if !create {
		return nil, nil
	}

	template := d.Spec.Template.DeepCopy()
	hash := PodTemplateHash(template, d.Status.CollisionCount)
	template.Labels = withLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	zero := int32(0)
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            replicaSetName(d.Name, hash),
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{controllerRef(d)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        &zero,
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selectorWithLabel(d.Spec.Selector, appsv1.DefaultDeploymentUniqueLabelKey, hash),
			Template:        *template,
		},
	}
	n, err := newReplicas(d, append(slices.Clone(old), rs), rs)
	if err != nil {
		return nil, err
	}
	rs.Spec.Replicas = &n
	setNewAnnotations(d, rs, newRevision, false)

	existed := false
	created, err := c.client.AppsV1().ReplicaSets(d.Namespace).Create(ctx, rs, metav1.CreateOptions{})
	switch {
	case apierrors.IsAlreadyExists(err):
		existed = true
		got, getErr := c.replicaSets.ReplicaSets(rs.Namespace).Get(rs.Name)
		if getErr != nil {
			return nil, getErr
		}
		if ref := metav1.GetControllerOfNoCopy(got); ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &got.Spec.Template) {
			created, err = got, nil
			break
		}
		// Another template has this hash: count the collision so that the
		// next sync hashes differently.
		if d.Status.CollisionCount == nil {
			d.Status.CollisionCount = new(int32)
		}
		*d.Status.CollisionCount++
		if uErr := c.updateStatus(ctx, d); uErr == nil {
			c.log.Info("pod template hash collision; collision count raised", "deployment", d.Namespace+"/"+d.Name,
				"collisionCount", *d.Status.CollisionCount)
		}
		return nil, err
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil, err
	case err != nil:
		msg := fmt.Sprintf("Failed to create new replica set %q: %v", rs.Name, err)
		if hasProgressDeadline(d) {
			setCondition(&d.Status, newCondition(c.now(), appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonReplicaSetCreateError, msg))
			_ = c.updateStatus(ctx, d)
		}
		c.recorder.Eventf(d, corev1.EventTypeWarning, ReasonReplicaSetCreateError, "%s", msg)
		return nil, err
	}
	if !existed && n > 0 {
		c.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set %s from 0 to %d", created.Name, n)
	}
	update := setRevision(d, fmt.Sprint(newRevision))
	if !existed && hasProgressDeadline(d) {
		setCondition(&d.Status, newCondition(c.now(), appsv1.DeploymentProgressing, corev1.ConditionTrue,
			ReasonNewReplicaSetCreated, fmt.Sprintf("Created new replica set %q", created.Name)))
		update = true
	}
	if update {
		err = c.updateStatus(ctx, d)
	}
	return created, err
}

// controllerRef is the controller reference a Deployment puts on its
// ReplicaSets.
func controllerRef(d *appsv1.Deployment) metav1.OwnerReference {
	yes := true
	return metav1.OwnerReference{APIVersion: kind.GroupVersion().String(), Kind: kind.Kind, Name: d.Name, UID: d.UID,
		Controller: &yes, BlockOwnerDeletion: &yes}
}

// scaleOnly handles a scaling event or a paused Deployment: it scales
// without rolling out, and for a paused one cleans up old ReplicaSets.
func (c *Controller) scaleOnly(ctx context.Context, d *appsv1.Deployment, rss []*appsv1.ReplicaSet) error {
	newRS, old, err := c.newAndOld(ctx, d, rss, false)
	if err != nil {
		return err
	}
	if err := c.scale(ctx, d, newRS, old); err != nil {
		return err
	}
	if _, rollingBack := rollbackTo(d); d.Spec.Paused && !rollingBack {
		if err := c.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return c.syncStatus(ctx, append(old, newRS), newRS, d)
}

// scale brings the ReplicaSets to d's size: the only active one (or the
// newest if none is) takes it all; with a saturated new ReplicaSet the
// old ones go to zero; otherwise, in a rolling update, the difference to
// replicas plus surge is shared in proportion to their sizes.
func (c *Controller) scale(ctx context.Context, d *appsv1.Deployment, newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) error {
	if only := activeOrLatest(newRS, old); only != nil {
		if replicas(only) == desired(d) {
			return nil
		}
		_, _, err := c.scaleReplicaSet(ctx, only, desired(d), d, false)
		return err
	}
	if isSaturated(d, newRS) {
		for _, rs := range active(old) {
			if _, _, err := c.scaleReplicaSet(ctx, rs, 0, d, false); err != nil {
				return err
			}
		}
		return nil
	}
	if !isRolling(d) {
		return nil
	}
	all := active(append(slices.Clone(old), newRS))
	allowed := int32(0)
	if desired(d) > 0 {
		allowed = desired(d) + maxSurge(d)
	}
	toAdd := allowed - sumSpec(all)
	switch {
	case toAdd > 0:
		slices.SortStableFunc(all, bySizeNewer)
	case toAdd < 0:
		slices.SortStableFunc(all, bySizeOlder)
	}
	added := int32(0)
	sizes := make(map[string]int32, len(all))
	for _, rs := range all {
		if toAdd != 0 {
			p := proportion(rs, d, toAdd, added)
			sizes[rs.Name] = replicas(rs) + p
			added += p
		} else {
			sizes[rs.Name] = replicas(rs)
		}
	}
	for i, rs := range all {
		if i == 0 && toAdd != 0 {
			// The largest takes what rounding left over.
			sizes[rs.Name] = max(sizes[rs.Name]+toAdd-added, 0)
		}
		if _, _, err := c.scaleReplicaSet(ctx, rs, sizes[rs.Name], d, true); err != nil {
			return err
		}
	}
	return nil
}

// activeOrLatest returns the one active ReplicaSet, or when none is
// active the new one, else the newest old one; nil when several are
// active.
func activeOrLatest(newRS *appsv1.ReplicaSet, old []*appsv1.ReplicaSet) *appsv1.ReplicaSet {
	if newRS == nil && len(old) == 0 {
		return nil
	}
	sorted := slices.Clone(old)
	slices.SortFunc(sorted, func(a, b *appsv1.ReplicaSet) int { return byCreation(b, a) })
	all := active(append(sorted, newRS))
	switch len(all) {
	case 0:
		if newRS != nil {
			return newRS
		}
		return sorted[0]
	case 1:
		return all[0]
	}
	return nil
}

// scaleReplicaSet sets rs's replicas to n and its replicas annotations to
// d's, writing only when the size changes or, with force, when the
// annotations are stale too. It reports whether the size changed.
func (c *Controller) scaleReplicaSet(ctx context.Context, rs *appsv1.ReplicaSet, n int32, d *appsv1.Deployment, force bool) (bool, *appsv1.ReplicaSet, error) {
	if !force && replicas(rs) == n {
		return false, rs, nil
	}
	resize := replicas(rs) != n
	maximum := desired(d) + maxSurge(d)
	if !resize && !replicasAnnotationsStale(rs, desired(d), maximum) {
		return false, rs, nil
	}
	from := replicas(rs)
	cp := rs.DeepCopy()
	cp.Spec.Replicas = &n
	setReplicasAnnotations(cp, desired(d), maximum)
	out, err := c.client.AppsV1().ReplicaSets(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if err != nil {
		return false, out, err
	}
	if resize {
		dir := "down"
		if from < n {
			dir = "up"
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled %s replica set %s from %d to %d", dir, out.Name, from, n)
	}
	return resize, out, nil
}

// cleanup deletes old ReplicaSets beyond revisionHistoryLimit, lowest
// revisions first, skipping any that still has or expects replicas, whose
// status is behind its spec, or that is being deleted.
func (c *Controller) cleanup(ctx context.Context, old []*appsv1.ReplicaSet, d *appsv1.Deployment) error {
	if !hasRevisionHistoryLimit(d) {
		return nil
	}
	var alive []*appsv1.ReplicaSet
	for _, rs := range old {
		if rs != nil && rs.DeletionTimestamp == nil {
			alive = append(alive, rs)
		}
	}
	diff := min(len(alive)-int(*d.Spec.RevisionHistoryLimit), len(alive))
	if diff <= 0 {
		return nil
	}
	slices.SortStableFunc(alive, byRevision)
	for _, rs := range alive[:diff] {
		if rs.Status.Replicas != 0 || replicas(rs) != 0 || rs.Generation > rs.Status.ObservedGeneration {
			continue
		}
		err := c.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// rolloutRolling takes one step of a rolling update: scale the new
// ReplicaSet up if the surge allows, else the old ones down if
// availability allows, and clean up once complete.
func (c *Controller) rolloutRolling(ctx context.Context, d *appsv1.Deployment, rss []*appsv1.ReplicaSet) error {
	newRS, old, err := c.newAndOld(ctx, d, rss, true)
	if err != nil {
		return err
	}
	all := append(slices.Clone(old), newRS)
	up, err := c.reconcileNew(ctx, all, newRS, d)
	if err != nil {
		return err
	}
	if up {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	down, err := c.reconcileOld(ctx, all, active(old), newRS, d)
	if err != nil {
		return err
	}
	if down {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if complete(d, &d.Status) {
		if err := c.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, all, newRS, d)
}

func (c *Controller) reconcileNew(ctx context.Context, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	switch {
	case replicas(newRS) == desired(d):
		return false, nil
	case replicas(newRS) > desired(d):
		scaled, _, err := c.scaleReplicaSet(ctx, newRS, desired(d), d, false)
		return scaled, err
	}
	n, err := newReplicas(d, all, newRS)
	if err != nil {
		return false, err
	}
	scaled, _, err := c.scaleReplicaSet(ctx, newRS, n, d, false)
	return scaled, err
}

// reconcileOld scales old ReplicaSets down as far as availability allows:
// no lower than replicas minus maxUnavailable available, counting the new
// ReplicaSet's unavailable replicas against the room.
func (c *Controller) reconcileOld(ctx context.Context, all, old []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, d *appsv1.Deployment) (bool, error) {
	if sumSpec(old) == 0 {
		return false, nil
	}
	minAvailable := desired(d) - maxUnavailable(d)
	newUnavailable := replicas(newRS) - newRS.Status.AvailableReplicas
	room := sumSpec(all) - minAvailable - newUnavailable
	if room <= 0 {
		return false, nil
	}
	old, cleaned, err := c.cleanupUnhealthy(ctx, old, d, room)
	if err != nil {
		return false, nil // as kube: a failed write here waits for the next sync
	}
	all = append(slices.Clone(old), newRS)
	scaled, err := c.scaleDownOld(ctx, all, old, d)
	if err != nil {
		return false, nil
	}
	return cleaned+scaled > 0, nil
}

// cleanupUnhealthy scales old ReplicaSets down by their unavailable
// replicas, oldest first, at most limit in all: removing those costs no
// availability.
func (c *Controller) cleanupUnhealthy(ctx context.Context, old []*appsv1.ReplicaSet, d *appsv1.Deployment, limit int32) ([]*appsv1.ReplicaSet, int32, error) {
	slices.SortStableFunc(old, byCreation)
	total := int32(0)
	for i, rs := range old {
		if total >= limit {
			break
		}
		if replicas(rs) == 0 || replicas(rs) == rs.Status.AvailableReplicas {
			continue
		}
		down := min(limit-total, replicas(rs)-rs.Status.AvailableReplicas)
		n := replicas(rs) - down
		if n > replicas(rs) {
			return nil, 0, fmt.Errorf("when cleaning up unhealthy replicas, got invalid request to scale down %s/%s %d -> %d", rs.Namespace, rs.Name, replicas(rs), n)
		}
		_, updated, err := c.scaleReplicaSet(ctx, rs, n, d, false)
		if err != nil {
			return nil, total, err
		}
		total += down
		old[i] = updated
	}
	return old, total, nil
}

// scaleDownOld scales old ReplicaSets down, oldest first, by as many as
// are available above replicas minus maxUnavailable.
func (c *Controller) scaleDownOld(ctx context.Context, all, old []*appsv1.ReplicaSet, d *appsv1.Deployment) (int32, error) {
	minAvailable := desired(d) - maxUnavailable(d)
	available := sumStatus(all, statusAvailable)
	if available <= minAvailable {
		return 0, nil
	}
	slices.SortStableFunc(old, byCreation)
	want := available - minAvailable
	total := int32(0)
	for _, rs := range old {
		if total >= want {
			break
		}
		if replicas(rs) == 0 {
			continue
		}
		down := min(replicas(rs), want-total)
		if _, _, err := c.scaleReplicaSet(ctx, rs, replicas(rs)-down, d, false); err != nil {
			return total, err
		}
		total += down
	}
	return total, nil
}

// rolloutRecreate scales every old ReplicaSet to zero, waits until their
// pods are gone, then creates or scales up the new one.
func (c *Controller) rolloutRecreate(ctx context.Context, d *appsv1.Deployment, rss []*appsv1.ReplicaSet) error {
	newRS, old, err := c.newAndOld(ctx, d, rss, false)
	if err != nil {
		return err
	}
	all := append(slices.Clone(old), newRS)
	scaled := false
	for _, rs := range active(old) {
		s, _, err := c.scaleReplicaSet(ctx, rs, 0, d, false)
		if err != nil {
			return err
		}
		scaled = scaled || s
	}
	if scaled {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	running, err := c.oldPodsRunning(newRS, old, rss)
	if err != nil {
		return err
	}
	if running {
		return c.syncRolloutStatus(ctx, all, newRS, d)
	}
	if newRS == nil {
		if newRS, old, err = c.newAndOld(ctx, d, rss, true); err != nil {
			return err
		}
		all = append(slices.Clone(old), newRS)
	}
	if _, _, err := c.scaleReplicaSet(ctx, newRS, desired(d), d, false); err != nil {
		return err
	}
	if complete(d, &d.Status) {
		if err := c.cleanup(ctx, old, d); err != nil {
			return err
		}
	}
	return c.syncRolloutStatus(ctx, all, newRS, d)
}

// oldPodsRunning reports whether the old ReplicaSets still count pods, or
// any pod of a ReplicaSet of d's but the new one has not finished.
func (c *Controller) oldPodsRunning(newRS *appsv1.ReplicaSet, old, rss []*appsv1.ReplicaSet) (bool, error) {
	if sumStatus(old, statusReplicas) > 0 {
		return true, nil
	}
	owned := map[string]bool{}
	for _, rs := range rss {
		if newRS == nil || rs.UID != newRS.UID {
			owned[string(rs.UID)] = true
		}
	}
	if len(owned) == 0 || len(rss) == 0 {
		return false, nil
	}
	pods, err := c.pods.Pods(rss[0].Namespace).List(labels.Everything())
	if err != nil {
		return false, err
	}
	for _, p := range pods {
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil || !owned[string(ref.UID)] {
			continue
		}
		if p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded {
			return true, nil
		}
	}
	return false, nil
}
