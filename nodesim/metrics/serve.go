package metrics

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclientset "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/ptr"
)

// Where metrics-server is registered, as its manifests register it.
const (
	Namespace      = metav1.NamespaceSystem
	ServiceName    = "metrics-server"
	APIServiceName = "v1beta1.metrics.k8s.io"
	// endpointSliceName is the slice up writes for the listener.
	endpointSliceName = "metrics-server-kubegate"
	// managedBy marks the slice as kubegate's, not the EndpointSlice
	// controller's.
	managedBy = "metrics-server.kubegate.io"
)

// servingLifetime is how long the serving certificate lasts: a year,
// though it is made anew at every start.
const servingLifetime = 365 * 24 * time.Hour

// ServingCert makes a CA and a certificate it signs for
// metrics-server.kube-system.svc, the name the aggregator verifies; it
// returns the certificate and the CA's PEM, the APIService's caBundle.
// Nothing is written to disk: the APIService gets the new CA at every
// start.
func ServingCert(now time.Time) (tls.Certificate, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "metrics-server-ca@" + fmt.Sprint(now.Unix())},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(servingLifetime),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, BasicConstraintsValid: true, IsCA: true,
		// It signs one certificate, never a CA.
		MaxPathLenZero: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	dns := ServiceName + "." + Namespace + ".svc"
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dns},
		DNSNames: []string{dns, "localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(servingLifetime),
		// A TLS server certificate only.
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// Serve serves s over TLS with cert on l until ctx is done. A client
// certificate is asked for, not required: the request-header
// authenticator verifies it.
func (s *Server) Serve(ctx context.Context, l net.Listener, cert tls.Certificate) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, ClientAuth: tls.RequestClientCert, MinVersion: tls.VersionTLS12},
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.ServeTLS(l, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	grace, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := hs.Shutdown(grace); err != nil {
		hs.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Register points metrics.k8s.io/v1beta1 at a listener on addr, an
// address of this machine that is not loopback (which no EndpointSlice
// may name), as metrics-server's manifests do: the Service
// kube-system/metrics-server (port https 443, no selector), an
// EndpointSlice of it naming addr, and the APIService
// v1beta1.metrics.k8s.io with caBundle, group priority 100 and version
// priority 100. What is there already is brought to that.
func Register(ctx context.Context, client kubernetes.Interface, apis aggregatorclientset.Interface, addr netip.AddrPort, caBundle []byte) error {
	port := int32(addr.Port())
	addressType := discoveryv1.AddressTypeIPv4
	if addr.Addr().Is6() {
		addressType = discoveryv1.AddressTypeIPv6
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: Namespace, Labels: map[string]string{"k8s-app": ServiceName}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(port)}}}}
	services := client.CoreV1().Services(Namespace)
	if old, err := services.Get(ctx, ServiceName, metav1.GetOptions{}); err == nil {
		old.Spec.Ports, old.Spec.Selector = svc.Spec.Ports, nil
		_, err = services.Update(ctx, old, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update service %s/%s: %w", Namespace, ServiceName, err)
		}
	} else if _, err := services.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create service %s/%s: %w", Namespace, ServiceName, err)
	}
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: endpointSliceName, Namespace: Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: ServiceName, discoveryv1.LabelManagedBy: managedBy}},
		AddressType: addressType,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr.Addr().String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
	endpointSlices := client.DiscoveryV1().EndpointSlices(Namespace)
	old, err := endpointSlices.Get(ctx, endpointSliceName, metav1.GetOptions{})
	if err == nil && old.AddressType != addressType {
		// The address type of a slice cannot change.
		if err := endpointSlices.Delete(ctx, endpointSliceName, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete endpointslice %s/%s: %w", Namespace, endpointSliceName, err)
		}
		err = apierrors.NewNotFound(discoveryv1.Resource("endpointslices"), endpointSliceName)
	}
	if err == nil {
		old.Labels, old.Ports, old.Endpoints = es.Labels, es.Ports, es.Endpoints
		if _, err := endpointSlices.Update(ctx, old, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update endpointslice %s/%s: %w", Namespace, endpointSliceName, err)
		}
	} else if _, err := endpointSlices.Create(ctx, es, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create endpointslice %s/%s: %w", Namespace, endpointSliceName, err)
	}
	spec := apiregistrationv1.APIServiceSpec{Group: metricsv1beta1.GroupName, Version: "v1beta1",
		Service:  &apiregistrationv1.ServiceReference{Namespace: Namespace, Name: ServiceName, Port: ptr.To[int32](443)},
		CABundle: caBundle, GroupPriorityMinimum: 100, VersionPriority: 100}
	apiServices := apis.ApiregistrationV1().APIServices()
	current, err := apiServices.Get(ctx, APIServiceName, metav1.GetOptions{})
	switch {
	case err == nil:
		current.Spec = spec
		_, err = apiServices.Update(ctx, current, metav1.UpdateOptions{})
	case apierrors.IsNotFound(err):
		_, err = apiServices.Create(ctx, &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: APIServiceName,
			Labels: map[string]string{"k8s-app": ServiceName}}, Spec: spec}, metav1.CreateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write apiservice %s: %w", APIServiceName, err)
	}
	return nil
}
