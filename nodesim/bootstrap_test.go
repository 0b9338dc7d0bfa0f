package nodesim_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/csrapproving"
	"github.com/kubegate/kubegate/controllers/csrsigning"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/internal/csrpem"
	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/nodesim"
)

const bootstrapUser = "system:bootstrap:abcdef"

// kubeadmPolicy allows what kubeadm's bindings allow for node client
// certificates, bootstrappers nodeclient and nodes selfnodeclient, and
// everything else to everyone.
var kubeadmPolicy = authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	if a.Resource != "certificatesigningrequests" || (a.Subresource != "nodeclient" && a.Subresource != "selfnodeclient") {
		return authz.Allow, "", nil
	}
	group := map[string]string{"nodeclient": "system:bootstrappers", "selfnodeclient": nodesim.NodesGroup}[a.Subresource]
	if a.Verb == "create" && slices.Contains(a.User.Groups, group) {
		return authz.Allow, "", nil
	}
	return authz.NoOpinion, "", nil
})

// Simulated nodes started with a bootstrap token each get a client
// certificate for system:node:NAME through the CSR API, auto-approved
// and signed, authenticate with it, and renew it with the certificate
// itself (docs/kubernetes-behaviour.md, H.5).
//
// The signer's clock runs 90 seconds behind and it signs for three
// minutes, so a certificate arrives already part-way through its
// lifetime (NotBefore five minutes back-dated, eight minutes in all):
// the nodes' unchanged 70–90% rule then renews each within about 40
// seconds of issuance, instead of the minutes a real lifetime takes.
func TestNodesBootstrapAuthenticateAndRenew_H5(t *testing.T) {
	dir := t.TempDir()
	authority, keyPEM, err := ca.CreateAuthority("ca", "kubegate-test-ca", ca.ECDSAP256, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	if err := os.WriteFile(certFile, authority.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	users := map[string]authn.User{"abcdef.0123456789abcdef": {Name: bootstrapUser,
		Groups: []string{"system:bootstrappers", "system:bootstrappers:kubeadm:default-node-token", authn.AllAuthenticated}}}
	s := apiservertest.Start(t, apiservertest.WithUsers(users, kubeadmPolicy), apiservertest.WithClientCA(authority.CertPEM))
	controllertest.Run(t, s, manager.Options{Logger: slog.New(slog.DiscardHandler),
		Descriptors:     []controllers.Descriptor{csrapproving.Descriptor, csrsigning.Descriptor},
		SigningCertFile: certFile, SigningKeyFile: keyFile, SigningDuration: 3 * time.Minute,
		Now: func() time.Time { return time.Now().Add(-90 * time.Second) }})

	bootstrapConfig := rest.CopyConfig(s.Config)
	bootstrapConfig.BearerToken = "abcdef.0123456789abcdef"
	sim, err := nodesim.New(s.Client, nodesim.Options{Count: 2, Logger: slog.New(slog.DiscardHandler),
		Bootstrap: &nodesim.Bootstrap{Config: bootstrapConfig}})
	if err != nil {
		t.Fatal(err)
	}
	apiservertest.Run(t, sim.Run)
	select {
	case <-sim.Registered():
	case <-time.After(60 * time.Second):
		t.Fatal("the nodes did not register within a minute")
	}
	ctx := context.Background()

	first := map[string]string{} // serial of each node's first certificate
	for _, name := range sim.NodeNames() {
		cert := sim.NodeCertificate(name)
		if cert == nil {
			t.Fatalf("%s registered without a certificate", name)
		}
		subject := cert.Leaf.Subject
		if subject.CommonName != "system:node:"+name || !slices.Equal(subject.Organization, []string{"system:nodes"}) {
			t.Errorf("%s: certificate subject %v", name, subject)
		}
		first[name] = cert.Leaf.SerialNumber.String()
		if u := whoami(t, sim.NodeConfig(name)); u.Username != "system:node:"+name ||
			!slices.Equal(u.Groups, []string{"system:nodes", authn.AllAuthenticated}) {
			t.Errorf("%s authenticates as %s %v", name, u.Username, u.Groups)
		}
	}

	// Each node's first request came from the bootstrap identity and was
	// approved and issued, with the kubelet's usages.
	csrs, err := s.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sim.NodeNames() {
		if !slices.ContainsFunc(csrs.Items, func(c certificatesv1.CertificateSigningRequest) bool {
			return c.Spec.Username == bootstrapUser && issuedFor(c, name) &&
				slices.Equal(c.Spec.Usages, []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth})
		}) {
			t.Errorf("no issued request by %s for %s among %s", bootstrapUser, name, describe(csrs.Items))
		}
	}

	// Each node renews as itself: a request by system:node:NAME, approved
	// only because its certificate put it in system:nodes, replaces the
	// certificate.
	for _, name := range sim.NodeNames() {
		testwait.For(t, 2*time.Minute, name+" renewing its certificate as itself", func() (bool, string) {
			cert := sim.NodeCertificate(name)
			csrs, err := s.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			renewed := slices.ContainsFunc(csrs.Items, func(c certificatesv1.CertificateSigningRequest) bool {
				return c.Spec.Username == "system:node:"+name && issuedFor(c, name)
			})
			serial := cert.Leaf.SerialNumber.String()
			return renewed && serial != first[name], fmt.Sprintf("serial %s (first %s), requests %s", serial, first[name], describe(csrs.Items))
		})
		if u := whoami(t, sim.NodeConfig(name)); u.Username != "system:node:"+name {
			t.Errorf("%s authenticates as %s after renewing", name, u.Username)
		}
	}
}

// whoami is the identity cfg authenticates as, by SelfSubjectReview.
func whoami(t *testing.T, cfg *rest.Config) authenticationv1.UserInfo {
	t.Helper()
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := client.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return review.Status.UserInfo
}

// issuedFor reports whether c is an approved and issued kubelet client
// request for node name.
func issuedFor(c certificatesv1.CertificateSigningRequest, name string) bool {
	approved := slices.ContainsFunc(c.Status.Conditions, func(cond certificatesv1.CertificateSigningRequestCondition) bool {
		return cond.Type == certificatesv1.CertificateApproved
	})
	return c.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName && approved && len(c.Status.Certificate) > 0 &&
		subjectCN(c) == "system:node:"+name
}

func subjectCN(c certificatesv1.CertificateSigningRequest) string {
	req, err := csrpem.Parse(c.Spec.Request)
	if err != nil {
		return ""
	}
	return req.Subject.CommonName
}

func describe(csrs []certificatesv1.CertificateSigningRequest) string {
	var out []string
	for _, c := range csrs {
		out = append(out, fmt.Sprintf("%s(by %s, cn %s, %d conditions, issued %v)", c.Name, c.Spec.Username, subjectCN(c), len(c.Status.Conditions), len(c.Status.Certificate) > 0))
	}
	return fmt.Sprint(out)
}
