package admission

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/store"
)

var runtimeClassesGVR = nodev1.SchemeGroupVersion.WithResource("runtimeclasses")

// RuntimeClass is kube-apiserver's RuntimeClass plugin (D.16): a new pod
// that names a runtimeClassName takes the class's overhead and its
// scheduling (node selector and tolerations merged into the pod's); a
// class that does not exist, an overhead other than the class's, or a
// node selector that conflicts with the class's is 403.
func RuntimeClass(st store.Store) apiserver.Admission { return runtimeClassPlugin{st: st} }

type runtimeClassPlugin struct{ st store.Store }

var _ apiserver.AdmissionValidator = runtimeClassPlugin{}

// class returns the pod of a and its RuntimeClass (nil when it names
// none); ok is false when the plugin has nothing to do with a.
func (p runtimeClassPlugin) class(ctx context.Context, a *apiserver.AdmissionAttributes) (*corev1.Pod, *nodev1.RuntimeClass, bool, error) {
	if a.Operation != apiserver.Create || a.Resource != podsGVR || a.Subresource != "" {
		return nil, nil, false, nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok || pod.Spec.RuntimeClassName == nil {
		return pod, nil, ok, nil
	}
	rc := &nodev1.RuntimeClass{}
	err := getStored(ctx, p.st, apiserver.Key(runtimeClassesGVR, "", *pod.Spec.RuntimeClassName), rc)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, false, forbidPod(a, fmt.Sprintf("pod rejected: RuntimeClass %q not found", *pod.Spec.RuntimeClassName))
	}
	if err != nil {
		return nil, nil, false, err
	}
	return pod, rc, true, nil
}

func forbidPod(a *apiserver.AdmissionAttributes, msg string) error {
	return apierrors.NewForbidden(podsGVR.GroupResource(), a.Name, errors.New(msg))
}

const overheadMismatch = "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"

func (p runtimeClassPlugin) Admit(ctx context.Context, a *apiserver.AdmissionAttributes) error {
	pod, rc, ok, err := p.class(ctx, a)
	if !ok || rc == nil {
		return err
	}
	if rc.Overhead != nil {
		if len(pod.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return forbidPod(a, overheadMismatch)
		}
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	if s := rc.Scheduling; s != nil {
		selector := pod.Spec.NodeSelector
		if selector == nil {
			selector = s.NodeSelector
		}
		for k, v := range s.NodeSelector {
			if pv, ok := selector[k]; ok && pv != v {
				return forbidPod(a, fmt.Sprintf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, pv))
			}
			selector[k] = v
		}
		pod.Spec.NodeSelector = selector
		pod.Spec.Tolerations = mergeTolerations(pod.Spec.Tolerations, s.Tolerations)
	}
	return nil
}

// Validate: the pod's overhead is its class's, and none without one.
func (p runtimeClassPlugin) Validate(ctx context.Context, a *apiserver.AdmissionAttributes) error {
	pod, rc, ok, err := p.class(ctx, a)
	if !ok {
		return err
	}
	if rc != nil && rc.Overhead != nil {
		if !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return forbidPod(a, overheadMismatch)
		}
	} else if pod.Spec.Overhead != nil {
		return forbidPod(a, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
	}
	return nil
}

// mergeTolerations is first then second without the tolerations another
// of them covers, the first of equal ones kept.
func mergeTolerations(first, second []corev1.Toleration) []corev1.Toleration {
	all := append(append([]corev1.Toleration(nil), first...), second...)
	var merged []corev1.Toleration
next:
	for i, t := range all {
		for _, m := range merged {
			if covers(m, t) {
				continue next
			}
		}
		for _, later := range all[i+1:] {
			if !apiequality.Semantic.DeepEqual(t, later) && covers(later, t) {
				continue next
			}
		}
		merged = append(merged, t)
	}
	return merged
}

// covers reports whether ss tolerates every taint t does.
func covers(ss, t corev1.Toleration) bool {
	if apiequality.Semantic.DeepEqual(t, ss) {
		return true
	}
	if t.Key != ss.Key && (ss.Key != "" || ss.Operator != corev1.TolerationOpExists) {
		return false
	}
	if t.Effect != ss.Effect && ss.Effect != "" {
		return false
	}
	if ss.Effect == corev1.TaintEffectNoExecute && ss.TolerationSeconds != nil &&
		(t.TolerationSeconds == nil || *t.TolerationSeconds > *ss.TolerationSeconds) {
		return false
	}
	switch ss.Operator {
	case corev1.TolerationOpEqual, "":
		return t.Operator == corev1.TolerationOpEqual && t.Value == ss.Value
	case corev1.TolerationOpExists:
		return true
	}
	return false
}
