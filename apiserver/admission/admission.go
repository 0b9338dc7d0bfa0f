// Package admission holds the API server's admission plugins and the
// service-account bookkeeping that goes with them, with kube-apiserver's
// behaviour:
//
//   - ServiceAccount: a pod without spec.serviceAccountName runs as the
//     namespace's "default" service account (no token volume is added);
//   - ServiceAccounts: a controller that gives every namespace its "default"
//     service account, as kube-controller-manager does.
package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubegate/kubegate/apiserver"
)

// DefaultServiceAccountName is the service account pods run as when they
// name none.
const DefaultServiceAccountName = "default"

// mirrorPodAnnotation marks a kubelet's mirror of a static pod, which the
// service-account plugin leaves alone.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

var (
	namespacesGVR      = corev1.SchemeGroupVersion.WithResource("namespaces")
	podsGVR            = corev1.SchemeGroupVersion.WithResource("pods")
	serviceAccountsGVR = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
)

// Chain returns the API server's admission plugins. The REST core itself refuses objects in namespaces that do not exist and the
// deletion of the system namespaces, and validates names.
func Chain() []apiserver.Admission {
	return []apiserver.Admission{ServiceAccount()}
}

// ServiceAccount sets spec.serviceAccountName (and its deprecated alias
// spec.serviceAccount) of a new pod that names no service account to
// "default", as kube-apiserver's ServiceAccount plugin does. Unlike that
// plugin it neither requires the service account to exist nor mounts a
// projected token volume: there are no kubelets to read one.
func ServiceAccount() apiserver.Admission {
	return apiserver.AdmissionFunc(func(_ context.Context, a *apiserver.AdmissionAttributes) error {
		if a.Operation != apiserver.Create || a.Resource != podsGVR || a.Subresource != "" {
			return nil
		}
		pod, ok := a.Object.(*corev1.Pod)
		if !ok || pod.Annotations[mirrorPodAnnotation] != "" {
			return nil
		}
		if pod.Spec.ServiceAccountName == "" {
			pod.Spec.ServiceAccountName = pod.Spec.DeprecatedServiceAccount
		}
		if pod.Spec.ServiceAccountName == "" {
			pod.Spec.ServiceAccountName = DefaultServiceAccountName
		}
		pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
		return nil
	})
}
