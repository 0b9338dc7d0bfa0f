package nodesim

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
)

// Bootstrap makes every node start as a kubelet does with a bootstrap
// kubeconfig (docs/kubernetes-behaviour.md, H.5): it generates its own
// key, asks for a kubernetes.io/kube-apiserver-client-kubelet
// certificate for system:node:NAME in system:nodes through the CSR API
// with the bootstrap identity, waits for it to be approved and issued,
// and from then on renews it with the certificate itself, when 70–90%
// (jittered) of its lifetime has passed. This is client-go's certificate
// manager, the kubelet's own.
type Bootstrap struct {
	// Config reaches the API server as the bootstrap identity (a
	// bootstrap token). Its host and CA, without its credentials, are
	// what the nodes' certificate clients use.
	Config *rest.Config
	// Lifetime, when positive, is asked for as the requests'
	// expirationSeconds (the API takes at least ten minutes); zero lets
	// the signer choose.
	Lifetime time.Duration
}

// credential is one node's client certificate and the manager that keeps
// it current.
type credential struct {
	name   string
	mgr    certificate.Manager
	config *rest.Config // authenticates with mgr's current certificate
}

// newCredential prepares node name's certificate manager; nothing is
// requested until start.
func newCredential(b *Bootstrap, name string) (*credential, error) {
	bootstrapClient, err := kubernetes.NewForConfig(b.Config)
	if err != nil {
		return nil, fmt.Errorf("bootstrap config: %w", err)
	}
	c := &credential{name: name}
	if c.config, err = certificateConfig(b.Config, func() *tls.Certificate {
		if c.mgr == nil {
			return nil
		}
		return c.mgr.Current()
	}); err != nil {
		return nil, err
	}
	certClient, err := kubernetes.NewForConfig(c.config)
	if err != nil {
		return nil, err
	}
	cfg := &certificate.Config{
		// The first request goes with the bootstrap identity; renewals
		// with the node's current certificate, as system:node:NAME
		// (selfnodeclient).
		ClientsetFn: func(current *tls.Certificate) (kubernetes.Interface, error) {
			if current == nil {
				return bootstrapClient, nil
			}
			return certClient, nil
		},
		Template: &x509.CertificateRequest{Subject: pkix.Name{
			CommonName:   NodeUserPrefix + name,
			Organization: []string{NodesGroup},
		}},
		SignerName:       certificatesv1.KubeAPIServerClientKubeletSignerName,
		GetUsages:        certificate.DefaultKubeletClientGetUsages,
		CertificateStore: &memoryStore{},
		Name:             "kubelet client certificate of " + name,
	}
	if b.Lifetime > 0 {
		cfg.RequestedCertificateLifetime = &b.Lifetime
	}
	if c.mgr, err = certificate.NewManager(cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// The identity a node's certificate names (H.5).
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

// certificateConfig is base's host and CA, without its credentials,
// presenting whatever current returns as the client certificate on each
// new connection.
func certificateConfig(base *rest.Config, current func() *tls.Certificate) (*rest.Config, error) {
	anon := rest.AnonymousClientConfig(base)
	tlsConfig, err := rest.TLSConfigFor(anon)
	if err != nil {
		return nil, fmt.Errorf("bootstrap config: %w", err)
	}
	if tlsConfig == nil {
		return nil, errors.New("bootstrap config: the API server is not reached over TLS, so no client certificate can be presented")
	}
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if c := current(); c != nil {
			return c, nil
		}
		return &tls.Certificate{}, nil // none yet: send no certificate
	}
	transport := &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true,
		TLSHandshakeTimeout: 10 * time.Second, IdleConnTimeout: 90 * time.Second, MaxIdleConnsPerHost: 25}
	return &rest.Config{Host: anon.Host, APIPath: anon.APIPath, Transport: transport, QPS: -1,
		UserAgent: anon.UserAgent, Timeout: anon.Timeout}, nil
}

// start runs the manager until ctx is done: it requests the first
// certificate at once and renews it from then on.
func (c *credential) start(ctx context.Context) {
	go func() {
		<-ctx.Done()
		c.mgr.Stop()
	}()
	c.mgr.Start()
}

// waitForCertificate polls until the node has a certificate or ctx is
// done.
func (c *credential) waitForCertificate(ctx context.Context) error {
	for c.mgr.Current() == nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// memoryStore keeps a node's key and certificate in memory: a simulated
// node has no disk of its own.
type memoryStore struct {
	mu   sync.Mutex
	cert *tls.Certificate
}

func (s *memoryStore) Current() (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert == nil {
		e := certificate.NoCertKeyError("no certificate yet")
		return nil, &e
	}
	return s.cert, nil
}

func (s *memoryStore) Update(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	if cert.Leaf == nil {
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, err
		}
	}
	s.mu.Lock()
	s.cert = &cert
	s.mu.Unlock()
	return &cert, nil
}
