package csrapproving_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"log/slog"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/csrapproving"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testwait"
)

// The requesters: a bootstrap token allowed nodeclient, node n2 allowed
// selfnodeclient, and a user allowed neither.
var users = map[string]authn.User{
	"bootstrap": {Name: "system:bootstrap:abcdef", Groups: []string{"system:bootstrappers", authn.AllAuthenticated}},
	"node-n2":   {Name: "system:node:n2", Groups: []string{"system:nodes", authn.AllAuthenticated}},
	"mallory":   {Name: "mallory", Groups: []string{authn.AllAuthenticated}},
}

// policy lets everyone create and read CSRs, the bootstrap group create
// certificatesigningrequests/nodeclient and the nodes group
// certificatesigningrequests/selfnodeclient, as kube's
// system:node-bootstrapper, system:certificates.k8s.io:certificatesigningrequests:nodeclient
// and ...:selfnodeclient bindings of a kubeadm cluster do.
var policy = authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	if a.APIGroup != "certificates.k8s.io" || a.Resource != "certificatesigningrequests" {
		return authz.NoOpinion, "", nil
	}
	in := func(group string) bool {
		for _, g := range a.User.Groups {
			if g == group {
				return true
			}
		}
		return false
	}
	switch {
	case a.Subresource == "" && a.Verb != "delete":
		return authz.Allow, "", nil
	case a.Subresource == "nodeclient" && a.Verb == "create" && in("system:bootstrappers"):
		return authz.Allow, "", nil
	case a.Subresource == "selfnodeclient" && a.Verb == "create" && in("system:nodes"):
		return authz.Allow, "", nil
	}
	return authz.NoOpinion, "", nil
})

func clientAs(t *testing.T, s *apiservertest.Server, token string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(s.Config)
	cfg.BearerToken = token
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func create(t *testing.T, client kubernetes.Interface, name, signer, cn string, orgs []string, usages ...certificatesv1.KeyUsage) {
	t.Helper()
	subject, err := asn1.Marshal(pkix.Name{CommonName: cn, Organization: orgs}.ToRDNSequence())
	if err != nil {
		t.Fatal(err)
	}
	createRaw(t, client, name, signer, subject, usages...)
}

// createRaw creates a request whose subject is the DER subject.
func createRaw(t *testing.T, client kubernetes.Interface, name, signer string, subject []byte, usages ...certificatesv1.KeyUsage) {
	t.Helper()
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Usages: usages,
			Request: testpki.CSR(t, &x509.CertificateRequest{RawSubject: subject})}}
	if _, err := client.CertificatesV1().CertificateSigningRequests().Create(context.Background(), csr, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
}

// A kubelet client request from a requester allowed nodeclient
// (bootstrap) or, for its own name, selfnodeclient (renewal) is approved
// with reason AutoApproved and kube's message; one from a requester
// allowed neither, one for another signer, and those that break the
// kubelet client rules or hide a subject attribute are left for a person (docs/kubernetes-behaviour.md
// H.4).
func TestNodeClientRequestsAreAutoApproved_H4(t *testing.T) {
	s := apiservertest.Start(t, apiservertest.WithUsers(users, policy))
	controllertest.Run(t, s, manager.Options{Logger: slog.New(slog.DiscardHandler),
		Descriptors: []controllers.Descriptor{csrapproving.Descriptor}})
	kubelet := certificatesv1.KubeAPIServerClientKubeletSignerName
	nodes := []string{"system:nodes"}
	ds, cli := certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth
	bootstrap, node, mallory := clientAs(t, s, "bootstrap"), clientAs(t, s, "node-n2"), clientAs(t, s, "mallory")

	// Left alone.
	create(t, mallory, "not-allowed", kubelet, "system:node:n3", nodes, ds, cli)
	create(t, bootstrap, "other-signer", certificatesv1.KubeAPIServerClientSignerName, "system:node:n1", nodes, ds, cli)
	create(t, bootstrap, "wrong-usages", kubelet, "system:node:n1", nodes, cli)
	create(t, bootstrap, "wrong-org", kubelet, "system:node:n1", []string{"system:nodes", "system:masters"}, ds, cli)
	create(t, node, "other-node", kubelet, "system:node:n9", nodes, ds, cli)
	// An O of system:masters encoded as a UniversalString, which Go
	// leaves out of Organization but OpenSSL reads (H.3).
	var ucs4 []byte
	for _, r := range "system:masters" {
		ucs4 = append(ucs4, 0, 0, 0, byte(r))
	}
	hidden, err := asn1.Marshal(pkix.RDNSequence{
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 10}, Value: "system:nodes"}},
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 10}, Value: asn1.RawValue{Tag: 28, Bytes: ucs4}}},
		{{Type: asn1.ObjectIdentifier{2, 5, 4, 3}, Value: "system:node:n1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	createRaw(t, bootstrap, "hidden-org", kubelet, hidden, ds, cli)
	// Approved.
	create(t, bootstrap, "bootstrap", kubelet, "system:node:n1", nodes, ds, cli)
	create(t, node, "renewal", kubelet, "system:node:n2", nodes, ds, cli)

	ctx := context.Background()
	get := func(name string) *certificatesv1.CertificateSigningRequest {
		t.Helper()
		csr, err := s.Client.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return csr
	}
	for name, message := range map[string]string{"bootstrap": csrapproving.MessageNode, "renewal": csrapproving.MessageSelfNode} {
		testwait.For(t, 30*time.Second, name+" approved", func() (bool, string) {
			csr := get(name)
			return len(csr.Status.Conditions) > 0, "no conditions"
		})
		c := get(name).Status.Conditions
		if len(c) != 1 || c[0].Type != certificatesv1.CertificateApproved || c[0].Status != "True" ||
			c[0].Reason != "AutoApproved" || c[0].Message != message {
			t.Errorf("%s: conditions %+v, want one Approved AutoApproved %q", name, c, message)
		}
	}
	for _, name := range []string{"not-allowed", "other-signer", "wrong-usages", "wrong-org", "other-node", "hidden-org"} {
		if c := get(name).Status.Conditions; len(c) != 0 {
			t.Errorf("%s was decided: %+v; want it left for a person", name, c)
		}
	}
}
