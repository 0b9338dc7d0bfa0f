package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

// startKubernetesService creates the kubernetes Service at start. Another
// API server on the same store may be creating it at the same moment:
// its reservation of the address then comes before its Service, and this
// server's create fails until the Service is there, which it then adopts
// (J.2). If the Service still cannot be made (an address another Service
// holds), the server starts and tries again with every reconcile of the
// endpoints, as kube-apiserver's controller does.
func (s *Server) startKubernetesService(ctx context.Context, port int) error {
	var err error
	for wait := 20 * time.Millisecond; ; wait *= 2 {
		if err = s.ensureKubernetesService(ctx, port); err == nil {
			return nil
		}
		var status apierrors.APIStatus
		if !errors.As(err, &status) || wait > time.Second {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return err // the store fails
	}
	s.log.Warn("the kubernetes service is not created yet", "err", err)
	return nil
}

// ensureKubernetesService creates the kubernetes Service in default if it
// is missing, as kube-apiserver does: the first address of the service
// range, port 443 (https) to the API server's port. One that exists by
// the time a create fails is taken as it is.
func (s *Server) ensureKubernetesService(ctx context.Context, port int) error {
	if port == 0 {
		port = 6443
	}
	res, ok := s.registry().get(servicesGVR)
	if !ok {
		return nil // a server without Services has no kubernetes Service
	}
	key := Key(servicesGVR, metav1.NamespaceDefault, kubernetesName)
	if _, err := s.cfg.Store.Get(ctx, key); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("check the kubernetes service: %w", err)
	}
	ip := s.svcAlloc.first.String()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesName, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			Ports: []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt(port)}},
			// As kube-apiserver writes it: the cluster IP and a single-stack
			// policy, the rest from the defaults and the allocation.
			ClusterIP: ip, IPFamilyPolicy: ptr.To(corev1.IPFamilyPolicySingleStack),
		},
	}
	_, err := s.createStored(ctx, res, svc)
	if err == nil || apierrors.IsAlreadyExists(err) {
		return nil
	}
	// Another server's Service may hold the address now.
	if _, getErr := s.cfg.Store.Get(ctx, key); getErr == nil {
		return nil
	}
	return fmt.Errorf("create the kubernetes service: %w", err)
}

// The default ServiceCIDR, "kubernetes", which kube-apiserver's
// default-service-cidr controller creates from its service cluster IP
// range and marks Ready (D.19).
const (
	defaultServiceCIDRName    = "kubernetes"
	serviceCIDRControllerName = "kubernetes-service-cidr-controller"
)

// ensureDefaultServiceCIDR creates the default ServiceCIDR when it is
// missing and, as kube's controller does by a forced apply of the status,
// sets its Ready condition when it has none. It writes through the
// server's own routes, so the object is written, and its fields owned,
// as those of kube's loopback client and controller are.
func (s *Server) ensureDefaultServiceCIDR(ctx context.Context) error {
	if _, ok := s.registry().get(ServiceCIDRsGVR); !ok {
		return nil
	}
	base := "/apis/" + ServiceCIDRsGVR.Group + "/" + ServiceCIDRsGVR.Version + "/" + ServiceCIDRsGVR.Resource
	sc := &networkingv1.ServiceCIDR{TypeMeta: metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "ServiceCIDR"},
		ObjectMeta: metav1.ObjectMeta{Name: defaultServiceCIDRName},
		Spec:       networkingv1.ServiceCIDRSpec{CIDRs: []string{s.svcAlloc.cidr.String()}}}
	code, body, err := s.loopbackRequest(ctx, http.MethodPost, base+"?fieldManager="+serverFieldManager, "application/json", sc)
	if err != nil {
		return err
	}
	switch code {
	case http.StatusCreated:
	case http.StatusConflict: // it exists
		if code, body, err = s.loopbackRequest(ctx, http.MethodGet, base+"/"+defaultServiceCIDRName, "", nil); err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("read the default service CIDR: %d %s", code, body)
		}
	default:
		return fmt.Errorf("create the default service CIDR: %d %s", code, body)
	}
	if err := json.Unmarshal(body, sc); err != nil {
		return fmt.Errorf("read the default service CIDR: %w", err)
	}
	if sc.DeletionTimestamp != nil {
		return nil // being deleted: nothing to mark
	}
	if want := []string{s.svcAlloc.cidr.String()}; !slices.Equal(sc.Spec.CIDRs, want) {
		// One left from another configuration is left as it is, not
		// Ready, as kube's default-service-cidr controller leaves it.
		s.log.Warn("the default service CIDR does not hold the configured range", "cidrs", sc.Spec.CIDRs, "configured", want)
		return nil
	}
	if c := apimeta.FindStatusCondition(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady); c != nil && c.Status != metav1.ConditionUnknown {
		return nil
	}
	apply := map[string]any{"apiVersion": networkingv1.SchemeGroupVersion.String(), "kind": "ServiceCIDR",
		"metadata": map[string]any{"name": defaultServiceCIDRName},
		"status": map[string]any{"conditions": []any{map[string]any{"type": networkingv1.ServiceCIDRConditionReady, "status": metav1.ConditionTrue,
			"message": "Kubernetes default Service CIDR is ready", "lastTransitionTime": metav1.NewTime(s.now())}}}}
	code, body, err = s.loopbackRequest(ctx, http.MethodPatch, base+"/"+defaultServiceCIDRName+"/status?force=true&fieldManager="+serviceCIDRControllerName,
		string(types.ApplyPatchType), apply)
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("mark the default service CIDR ready: %d %s", code, body)
	}
	return nil
}

// retryDefaultServiceCIDR tries ensureDefaultServiceCIDR again, waiting
// longer each time up to 5 s, until it succeeds or ctx ends; err is why
// the first try failed.
func (s *Server) retryDefaultServiceCIDR(ctx context.Context, err error) {
	for wait := 50 * time.Millisecond; err != nil; wait = min(2*wait, 5*time.Second) {
		s.log.Debug("default service CIDR not written yet", "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		err = s.ensureDefaultServiceCIDR(ctx)
	}
}

// loopbackRequest serves a request of the server's own, as its loopback
// client, body (if any) sent as JSON, and returns the answer.
func (s *Server) loopbackRequest(ctx context.Context, method, path, contentType string, body any) (int, []byte, error) {
	var r io.Reader = http.NoBody
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(WithLoopback(ctx), method, path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	s.system.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes(), nil
}

// ipAllocatorName is the manager kube-apiserver's cluster IP allocator
// labels the IPAddresses it creates with.
const ipAllocatorName = "ipallocator.k8s.io"

// holdIPsWithIPAddresses makes the allocator hold each Service's cluster
// IP with an IPAddress named by it, when the server serves them, as
// kube-apiserver's allocator does (D.19): created with the Service's
// reservation, labelled with its family and manager, its parent the
// Service, and deleted when the Service gives the address back.
func (s *Server) holdIPsWithIPAddresses() error {
	res, ok := s.registry().get(IPAddressesGVR)
	if !ok {
		return nil
	}
	al := s.svcAlloc
	al.ipPrefix = Key(IPAddressesGVR, "", "")
	al.createIP = func(ctx context.Context, ip netip.Addr, svc metav1.Object) error {
		obj := &networkingv1.IPAddress{
			ObjectMeta: metav1.ObjectMeta{Name: ip.String(), Labels: map[string]string{
				networkingv1.LabelIPAddressFamily: string(al.family), networkingv1.LabelManagedBy: ipAllocatorName}},
			Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{
				Resource: servicesGVR.Resource, Namespace: svc.GetNamespace(), Name: svc.GetName()}},
		}
		_, err := s.createStored(ctx, res, obj)
		return err
	}
	al.ipOwner = func(value []byte) (owner, error) {
		var ip networkingv1.IPAddress
		if err := UnmarshalStored(value, &ip); err != nil {
			return owner{}, err
		}
		p := ip.Spec.ParentRef
		if p == nil || p.Group != "" || p.Resource != servicesGVR.Resource {
			return owner{}, nil
		}
		return owner{Namespace: p.Namespace, Name: p.Name}, nil
	}
	return s.migrateServiceIPs(res)
}

// migrateServiceIPs turns the addresses a store keeps from a kubegate
// that held them under keys of its own into IPAddresses of their
// Services, so that none is handed out twice.
func (s *Server) migrateServiceIPs(res *Resource) error {
	ctx := context.Background()
	page, err := s.cfg.Store.List(ctx, serviceIPPrefix, store.ListOptions{})
	if err != nil {
		return fmt.Errorf("read the service IPs to migrate: %w", err)
	}
	for _, kv := range page.KVs {
		var o owner
		ip, err := netip.ParseAddr(strings.TrimPrefix(kv.Key, serviceIPPrefix))
		if err != nil || json.Unmarshal(kv.Value, &o) != nil {
			continue // not an address this server wrote
		}
		svc := &metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name}
		if err := s.svcAlloc.createIP(ctx, ip, svc); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("migrate service IP %s: %w", ip, err)
		}
		// Another server starting at the same moment may have moved it.
		if _, _, err := s.cfg.Store.Delete(ctx, kv.Key, kv.ModRevision); err != nil &&
			!errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("migrate service IP %s: %w", ip, err)
		}
	}
	return nil
}
