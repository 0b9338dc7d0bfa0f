// Package admission holds the API server's admission plugins and the
// service-account bookkeeping that goes with them, with kube-apiserver's
// behaviour, in kube-apiserver's order (Chain):
//
//   - LimitRanger: a new pod takes its namespace's LimitRange defaults and
//     must stay within its min, max and limit/request ratio;
//   - ServiceAccount: a pod runs as a service account that exists, its
//     namespace's "default" unless it names one, and mounts its token;
//   - TaintNodesByCondition: a new node is tainted not-ready (NoSchedule)
//     until a node lifecycle controller sees it Ready;
//   - PodSecurity: pods meet the Pod Security Standards level their
//     namespace's labels enforce, and are warned about the level they warn;
//   - Priority: pods get the priority of their PriorityClass;
//   - DefaultTolerationSeconds: pods tolerate a not-ready or unreachable
//     node for 300 s;
//   - DefaultStorageClass: a claim that names no class gets the default
//     StorageClass;
//   - StorageObjectInUseProtection: new volumes, claims and volume
//     attributes classes get their protection finalizers;
//   - PersistentVolumeClaimResize: only a bound claim whose class allows
//     expansion may ask for more storage;
//   - RuntimeClass: a pod takes its RuntimeClass's overhead and
//     scheduling;
//   - CertificateApproval, CertificateSigning: approving a certificate
//     signing request takes "approve" on its signer, signing it "sign";
//   - ClusterTrustBundleAttest: publishing a signer's trust bundle takes
//     "attest" on the signer;
//   - CertificateSubjectRestriction: no request to the
//     kube-apiserver-client signer for the system:masters group;
//   - DefaultIngressClass: an Ingress naming no class gets the default
//     IngressClass's name;
//   - ResourceQuota: a write within a namespace's ResourceQuotas is
//     charged to them, one beyond them refused;
//   - ServiceAccounts: a controller that gives every namespace its "default"
//     service account, as kube-controller-manager does.
//
// As in kube-apiserver, every plugin's Admit (the mutating phase) runs
// before the server validates the object, and the Validate of those that
// have one (apiserver.AdmissionValidator) after it.
package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/store"
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

// Chain returns the API server's admission plugins over st, in
// kube-apiserver's order (its AllOrderedPlugins). The REST core itself
// refuses objects in namespaces that do not exist and the deletion of the
// system namespaces (NamespaceLifecycle), and validates names.
func Chain(st store.Store) []apiserver.Admission {
	return []apiserver.Admission{LimitRanger(), ServiceAccount(st), TaintNodesByCondition(), PodSecurity(st), Priority(st),
		DefaultTolerationSeconds(), DefaultStorageClass(st), StorageObjectInUseProtection(), PersistentVolumeClaimResize(st),
		RuntimeClass(st), CertificateApproval(), CertificateSigning(), ClusterTrustBundleAttest(), CertificateSubjectRestriction(),
		DefaultIngressClass(st), ResourceQuota(st)}
}

// ServiceAccount gives a new pod the service account of its namespace, as
// kube-apiserver's ServiceAccount plugin does (D.8): a pod that names none
// runs as "default" (spec.serviceAccount, the deprecated alias, follows);
// a service account that does not exist is refused with 403; unless the pod
// or its service account opts out, every container mounts a projected
// volume kube-api-access-XXXXX with a token, the cluster CA and the
// namespace; and a pod without image pull secrets takes the service
// account's.
func ServiceAccount(st store.Store) apiserver.Admission {
	r := &reads{st: st}
	return withReads{r, func(ctx context.Context, a *apiserver.AdmissionAttributes) error {
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

		sa, err := r.serviceAccount(ctx, a.Namespace, pod.Spec.ServiceAccountName)
		if err != nil {
			return apierrors.NewForbidden(podsGVR.GroupResource(), a.Name,
				fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, pod.Spec.ServiceAccountName, err))
		}
		if automount(sa, pod) {
			mountToken(pod)
		}
		if len(pod.Spec.ImagePullSecrets) == 0 {
			for _, s := range sa.ImagePullSecrets {
				pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s.Name})
			}
		}
		return nil
	}}
}

// reads is what the ServiceAccount and Priority plugins read for every
// pod: the server's Lister once it gives them one (its caches, as kube's
// plugins read informers), else the store.
type reads struct {
	st     store.Store
	lister apiserver.Lister
}

// SetLister implements apiserver.WantsLister.
func (r *reads) SetLister(l apiserver.Lister) { r.lister = l }

// withReads is a plugin function that reads through r.
type withReads struct {
	*reads
	admit apiserver.AdmissionFunc
}

func (w withReads) Admit(ctx context.Context, a *apiserver.AdmissionAttributes) error {
	return w.admit(ctx, a)
}

// serviceAccount reads a service account. A missing one is the error
// kube's lister gives.
func (r *reads) serviceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	var sa *corev1.ServiceAccount
	var err error
	if r.lister != nil {
		sa, err = r.lister.GetServiceAccount(ctx, namespace, name)
	} else {
		sa = &corev1.ServiceAccount{}
		err = getStored(ctx, r.st, apiserver.Key(serviceAccountsGVR, namespace, name), sa)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccount"}, name)
	}
	return sa, err
}

// getStored decodes the stored object under key into obj.
func getStored(ctx context.Context, st store.Store, key string, obj runtime.Object) error {
	kv, err := st.Get(ctx, key)
	if err != nil {
		return err
	}
	return apiserver.UnmarshalStored(kv.Value, obj)
}

// automount: the pod's automountServiceAccountToken if set, else the
// service account's, else true.
func automount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

const (
	// tokenVolumePrefix names the projected token volume, followed by five
	// random characters.
	tokenVolumePrefix = "kube-api-access-"
	// TokenMountPath is where containers find the token, the CA and the
	// namespace.
	TokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// tokenExpirationSeconds is the requested token lifetime: an hour and
	// seven seconds, as kube asks, so that kubelets can tell it from a
	// token a user asked for.
	tokenExpirationSeconds = 3607
)

// mountToken mounts the projected token volume in every container (init
// containers first) that has nothing mounted at TokenMountPath, and adds
// the volume if any container mounts it. A volume already named
// kube-api-access-* is reused.
func mountToken(pod *corev1.Pod) {
	name := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, tokenVolumePrefix) {
			name = v.Name
			break
		}
	}
	hasVolume := name != ""
	if !hasVolume {
		name = tokenVolumePrefix + utilrand.String(5)
	}
	mounted := false
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if !slices.ContainsFunc(cs[i].VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == TokenMountPath }) {
				cs[i].VolumeMounts = append(cs[i].VolumeMounts, corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: TokenMountPath})
				mounted = true
			}
		}
	}
	if hasVolume || !mounted {
		return
	}
	expiration, mode := int64(tokenExpirationSeconds), int32(0o644)
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: &expiration, Path: "token"}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"},
				Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace",
				FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}})
}

// DefaultTolerationSeconds lets a new or updated pod stay 300 s on a node
// that turns not-ready or unreachable, as kube-apiserver's plugin of that
// name does (D.8): unless one of its tolerations already covers the
// NoExecute taint, it gets one with tolerationSeconds 300.
func DefaultTolerationSeconds() apiserver.Admission {
	return apiserver.AdmissionFunc(func(_ context.Context, a *apiserver.AdmissionAttributes) error {
		if a.Resource != podsGVR || a.Subresource != "" || (a.Operation != apiserver.Create && a.Operation != apiserver.Update) {
			return nil
		}
		pod, ok := a.Object.(*corev1.Pod)
		if !ok {
			return nil
		}
		for _, taint := range []string{corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable} {
			covered := slices.ContainsFunc(pod.Spec.Tolerations, func(t corev1.Toleration) bool {
				return (t.Key == taint || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "")
			})
			if !covered {
				seconds := int64(defaultTolerationSeconds)
				pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{Key: taint, Operator: corev1.TolerationOpExists,
					Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds})
			}
		}
		return nil
	})
}

// defaultTolerationSeconds is kube-apiserver's default for both taints.
const defaultTolerationSeconds = 300

// storeFault reports whether err is a failure of the store itself, which
// the REST layer answers as kube-apiserver answers an etcd fault, without
// the key (J.4), rather than as a plugin's own refusal.
func storeFault(err error) bool {
	return errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrMaybeApplied)
}
