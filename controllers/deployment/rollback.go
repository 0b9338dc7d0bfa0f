package deployment

import (
	"context"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The reasons of the events a rollback requested by annotation emits.
const (
	reasonRollbackDone              = "DeploymentRollback"
	reasonRollbackRevisionNotFound  = "DeploymentRollbackRevisionNotFound"
	reasonRollbackTemplateUnchanged = "DeploymentRollbackTemplateUnchanged"
)

// rollbackTo is the revision the deprecated.deployment.rollback.to
// annotation asks for (0: the one before the current), or false when it
// is absent or not a number. The annotation carries extensions/v1beta1's
// spec.rollbackTo through apps/v1; kubectl rolls back client side instead.
func rollbackTo(d *appsv1.Deployment) (int64, bool) {
	v := d.Annotations[deprecatedRollbackTo]
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// rollback puts the template of the ReplicaSet at the requested revision
// back in d, with that ReplicaSet's annotations, and removes the request
// whatever the outcome; the next sync rolls the template out.
func (c *Controller) rollback(ctx context.Context, d *appsv1.Deployment, rss []*appsv1.ReplicaSet) error {
	newRS, old, err := c.newAndOld(ctx, d, rss, true)
	if err != nil {
		return err
	}
	all := append(old, newRS)
	want, _ := rollbackTo(d)
	if want == 0 {
		if want = previousRevision(all); want == 0 {
			c.recorder.Eventf(d, corev1.EventTypeWarning, reasonRollbackRevisionNotFound, "Unable to find last revision.")
			return c.clearRollback(ctx, d)
		}
	}
	for _, rs := range all {
		if rs == nil {
			continue
		}
		if v, err := revision(rs); err != nil || v != want {
			continue
		}
		if equalIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			c.recorder.Eventf(d, corev1.EventTypeWarning, reasonRollbackTemplateUnchanged,
				"The rollback revision contains the same template as current deployment %q", d.Name)
			return c.clearRollback(ctx, d)
		}
		d.Spec.Template.ObjectMeta = rs.Spec.Template.ObjectMeta
		d.Spec.Template.Spec = rs.Spec.Template.Spec
		d.Spec.Template.Labels = withoutLabel(rs.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
		// The Deployment takes the ReplicaSet's annotations (its change
		// cause), keeping only its own of the controller's.
		kept := map[string]string{}
		for k, v := range d.Annotations {
			if skipAnnotation(k) {
				kept[k] = v
			}
		}
		for k, v := range rs.Annotations {
			if !skipAnnotation(k) {
				kept[k] = v
			}
		}
		d.Annotations = kept
		if err := c.clearRollback(ctx, d); err != nil {
			return err
		}
		c.recorder.Eventf(d, corev1.EventTypeNormal, reasonRollbackDone, "Rolled back deployment %q to revision %d", d.Name, want)
		return nil
	}
	c.recorder.Eventf(d, corev1.EventTypeWarning, reasonRollbackRevisionNotFound, "Unable to find the revision to rollback to.")
	return c.clearRollback(ctx, d)
}

// clearRollback removes the rollback request and writes d.
func (c *Controller) clearRollback(ctx context.Context, d *appsv1.Deployment) error {
	delete(d.Annotations, deprecatedRollbackTo)
	_, err := c.client.AppsV1().Deployments(d.Namespace).Update(ctx, d, metav1.UpdateOptions{})
	return err
}

// previousRevision is the second highest revision among rss.
func previousRevision(rss []*appsv1.ReplicaSet) int64 {
	var first, second int64
	for _, rs := range rss {
		if rs == nil {
			continue
		}
		v, err := revision(rs)
		switch {
		case err != nil:
		case v >= first:
			first, second = v, first
		case v > second:
			second = v
		}
	}
	return second
}

// withoutLabel returns a copy of m without key.
func withoutLabel(m map[string]string, key string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}
