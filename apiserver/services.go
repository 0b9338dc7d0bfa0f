package apiserver

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/store"
)

// The kubernetes Service. Services themselves are
// apiserver/registry/core's, their cluster IPs and node ports reserved
// through the allocator in svcalloc.go; the Service every cluster has is
// written here, at start, because it needs the server's configuration:
// the service range's first address and the API server's port.

var servicesGVR = coreGV.WithResource("services")

// ensureKubernetesService creates the kubernetes Service in default, as
// kube-apiserver does at start: the first address of the service range,
// port 443 (https) to the API server's port.
func (s *Server) ensureKubernetesService(ctx context.Context, port int) error {
	if port == 0 {
		port = 6443
	}
	res, ok := s.registry().get(servicesGVR)
	if !ok {
		return nil // a server without Services has no kubernetes Service
	}
	if _, err := s.cfg.Store.Get(ctx, Key(servicesGVR, metav1.NamespaceDefault, "kubernetes")); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("check the kubernetes service: %w", err)
	}
	ip := s.svcAlloc.first.String()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt(port)}},
			// As kube-apiserver writes it: the cluster IP and a single-stack
			// policy, the rest from the defaults and the allocation.
			ClusterIP: ip, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
		},
	}
	if _, err := s.createStored(ctx, res, svc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create the kubernetes service: %w", err)
	}
	return nil
}
