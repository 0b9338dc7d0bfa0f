package e2e

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/internal/testpki"
)

// TestCSRApprovalWithKubectl_H1 drives the CertificateSigningRequest API
// of kubegate up with kubectl: a user's request carries the user's name
// whatever its body says, shows Pending, cannot be approved by a user
// without approve on its signer, and is approved by the admin.
func TestCSRApprovalWithKubectl_H1(t *testing.T) {
	requireTool(t, "kubectl")
	dir := filepath.Join(t.TempDir(), "cluster")
	c := startUp(t, dir, 0)
	files := t.TempDir()

	bobConf := filepath.Join(files, "bob.conf")
	if res := kubegate(t, "kubeconfig", "create", "--dir", dir, "--user", "bob", "--org", "devs", "--server", c.server, "--out", bobConf); res.code != 0 {
		t.Fatalf("kubeconfig create: %d %s", res.code, res.stderr)
	}
	// bob may create and read requests and write the approval
	// subresource, but approve for no signer.
	must(t, c.kubectl(t, nil, "create", "clusterrole", "csr-requester", "--verb=create,get,list,watch", "--resource=certificatesigningrequests"), "created")
	must(t, c.kubectl(t, nil, "create", "clusterrole", "csr-approval-writer", "--verb=update", "--resource=certificatesigningrequests/approval"), "created")
	must(t, c.kubectl(t, nil, "create", "clusterrolebinding", "bob-csr", "--clusterrole=csr-requester", "--user=bob"), "created")
	must(t, c.kubectl(t, nil, "create", "clusterrolebinding", "bob-approval", "--clusterrole=csr-approval-writer", "--user=bob"), "created")

	req := base64.StdEncoding.EncodeToString(testpki.CSR(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "bob", Organization: []string{"devs"}}}))
	manifest := `apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: bob-client
spec:
  request: ` + req + `
  signerName: kubernetes.io/kube-apiserver-client
  expirationSeconds: 86400
  usages: [digital signature, client auth]
  username: kubernetes-admin
  groups: [system:masters]
`
	must(t, c.kubectl(t, []byte(manifest), "--kubeconfig", bobConf, "create", "-f", "-"), "certificatesigningrequest.certificates.k8s.io/bob-client created")

	t.Run("the requester is bob, not the body's", func(t *testing.T) {
		res := c.kubectl(t, nil, "get", "csr", "bob-client", "-o", "jsonpath={.spec.username} {.spec.groups}")
		must(t, res, "bob ")
		if strings.Contains(res.stdout, "system:masters") || !strings.Contains(res.stdout, "devs") {
			t.Errorf("spec.username and groups = %q, want bob's", res.stdout)
		}
	})
	t.Run("get csr shows Pending", func(t *testing.T) {
		res := c.kubectl(t, nil, "get", "csr")
		must(t, res, "bob-client")
		for _, want := range []string{"NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION", "kubernetes.io/kube-apiserver-client", "bob", "24h", "Pending"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("kubectl get csr lacks %q:\n%s", want, res.stdout)
			}
		}
	})
	t.Run("bob cannot approve", func(t *testing.T) {
		res := c.kubectl(t, nil, "--kubeconfig", bobConf, "certificate", "approve", "bob-client")
		if res.code == 0 || !strings.Contains(res.stderr, `user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"`) ||
			!strings.Contains(res.stderr, "Forbidden") && !strings.Contains(res.stderr, "forbidden") {
			t.Fatalf("got exit %d, stderr %q; want a 403 naming the signer", res.code, res.stderr)
		}
		must(t, c.kubectl(t, nil, "get", "csr", "bob-client"), "Pending")
	})
	t.Run("the admin approves", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "certificate", "approve", "bob-client"), "certificatesigningrequest.certificates.k8s.io/bob-client approved")
		must(t, c.kubectl(t, nil, "get", "csr", "bob-client"), "Approved")
	})
}
