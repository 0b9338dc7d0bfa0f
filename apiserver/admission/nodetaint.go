package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubegate/kubegate/apiserver"
)

var nodesGVR = corev1.SchemeGroupVersion.WithResource("nodes")

// TaintNodesByCondition is kube-apiserver's plugin of that name (D.8): a
// node created through the API gets the node.kubernetes.io/not-ready
// NoSchedule taint unless it already has a taint of that key and effect
// (whatever its value), so that no pod is scheduled to it before a node
// lifecycle controller has seen it Ready and lifted the taint. Every
// creator is treated alike, a node's own kubelet included; updates and
// subresources are left alone.
func TaintNodesByCondition() apiserver.Admission {
	return apiserver.AdmissionFunc(func(_ context.Context, a *apiserver.AdmissionAttributes) error {
		if a.Operation != apiserver.Create || a.Resource.GroupResource() != nodesGVR.GroupResource() || a.Subresource != "" {
			return nil
		}
		node, ok := a.Object.(*corev1.Node)
		if !ok {
			return apierrors.NewForbidden(nodesGVR.GroupResource(), a.Name, fmt.Errorf("unexpected type %T", a.Object))
		}
		notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}
		for i := range node.Spec.Taints {
			if node.Spec.Taints[i].MatchTaint(&notReady) {
				return nil
			}
		}
		node.Spec.Taints = append(node.Spec.Taints, notReady)
		return nil
	})
}
