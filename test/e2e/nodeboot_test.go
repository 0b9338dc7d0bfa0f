package e2e

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/kubeconfig"
)

// nodeCSR is what the node bootstrap test reads of a CSR.
type nodeCSR struct {
	name, requestor, cn, signer string
	approved                    bool
	certificate                 []byte // PEM, once issued
}

// nodeCSRs lists the cluster's CSRs with kubectl.
func (c *upCluster) nodeCSRs(t *testing.T) ([]nodeCSR, error) {
	t.Helper()
	res := c.kubectl(t, nil, "get", "csr", "-o", "json")
	if res.code != 0 {
		return nil, fmt.Errorf("kubectl get csr: %d %s", res.code, res.stderr)
	}
	var list struct {
		Items []struct {
			Metadata struct{ Name string }
			Spec     struct {
				Request    []byte `json:"request"`
				Username   string `json:"username"`
				SignerName string `json:"signerName"`
			}
			Status struct {
				Conditions  []struct{ Type string }
				Certificate []byte `json:"certificate"`
			}
		}
	}
	if err := json.Unmarshal([]byte(res.stdout), &list); err != nil {
		return nil, err
	}
	var out []nodeCSR
	for _, item := range list.Items {
		r := nodeCSR{name: item.Metadata.Name, requestor: item.Spec.Username, signer: item.Spec.SignerName, certificate: item.Status.Certificate}
		if block, _ := pem.Decode(item.Spec.Request); block != nil {
			if req, err := x509.ParseCertificateRequest(block.Bytes); err == nil {
				r.cn = req.Subject.CommonName
			}
		}
		for _, cond := range item.Status.Conditions {
			r.approved = r.approved || cond.Type == "Approved"
		}
		out = append(out, r)
	}
	return out, nil
}

// TestNodesBootstrapTheirCertificates_H5: kubegate up --nodes 3
// --node-bootstrap. Each node gets its client certificate through a
// request by the bootstrap token of DIR/bootstrap-kubelet.conf for
// system:node:node-N, approved and issued with no one running kubectl
// certificate approve, ends up Ready, and renews its certificate through
// a request made as system:node:node-N: the API server could only have
// taken that name from the node's certificate, since nothing else the
// node holds names it. The gateway's audit log shows the same: each
// node's renewal request authenticated by x509, with the serial of its
// first certificate.
//
// --cluster-signing-duration 3m makes each certificate live eight minutes
// (the signer back-dates five), so the nodes' 70–90% rule renews it
// between about 40 seconds and two minutes after it is issued.
func TestNodesBootstrapTheirCertificates_H5(t *testing.T) {
	requireTool(t, "kubectl")
	openssl := requireTool(t, "openssl")
	dir := filepath.Join(t.TempDir(), "cluster")
	audit := filepath.Join(t.TempDir(), "audit.log")
	c := startUp(t, dir, 0, "--nodes", "3", "--node-bootstrap", "--cluster-signing-duration", "3m", "--audit-log-path", audit)
	nodes := []string{"node-1", "node-2", "node-3"}

	testwait.For(t, 60*time.Second, "three Ready nodes", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "nodes", "-o", `jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}`)
		return res.stdout == "node-1=True node-2=True node-3=True ", fmt.Sprintf("%q %s\nkubegate up:\n%s", res.stdout, res.stderr, c.stderr)
	})

	conf, err := kubeconfig.Load(filepath.Join(dir, "bootstrap-kubelet.conf"))
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for _, u := range conf.AuthInfos {
		id, _, _ = strings.Cut(u.Token, ".")
	}
	if id == "" {
		t.Fatal("bootstrap-kubelet.conf holds no bootstrap token")
	}
	bootstrapUser := "system:bootstrap:" + id

	caPool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil || !caPool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("read the cluster CA: %v", err)
	}
	// issuedTo returns the certificate of an approved and issued kubelet
	// client request in csrs by requestor for node, for system:node:NODE
	// in system:nodes, from the cluster CA; nil if there is none.
	issuedTo := func(csrs []nodeCSR, requestor, node string) *x509.Certificate {
		for _, r := range csrs {
			if r.requestor != requestor || r.cn != "system:node:"+node || r.signer != "kubernetes.io/kube-apiserver-client-kubelet" || !r.approved {
				continue
			}
			block, _ := pem.Decode(r.certificate)
			if block == nil {
				continue
			}
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil || cert.Subject.CommonName != "system:node:"+node || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
				continue
			}
			if _, err = cert.Verify(x509.VerifyOptions{Roots: caPool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
				return cert
			}
		}
		return nil
	}
	issuedBy := func(csrs []nodeCSR, requestor, node string) bool { return issuedTo(csrs, requestor, node) != nil }

	t.Run("each node's first certificate was requested with the bootstrap token and auto-approved", func(t *testing.T) {
		csrs, err := c.nodeCSRs(t)
		if err != nil {
			t.Fatal(err)
		}
		for _, node := range nodes {
			if !issuedBy(csrs, bootstrapUser, node) {
				t.Errorf("no issued request by %s for %s: %v", bootstrapUser, node, csrs)
			}
		}
		// kubectl's table says the same.
		res := c.kubectl(t, nil, "get", "csr")
		if n := strings.Count(res.stdout, bootstrapUser); res.code != 0 || n < 3 {
			t.Errorf("kubectl get csr: %d requests by %s in:\n%s%s", n, bootstrapUser, res.stdout, res.stderr)
		}
		for line := range strings.SplitSeq(res.stdout, "\n") {
			if strings.Contains(line, bootstrapUser) && !strings.HasSuffix(strings.TrimSpace(line), "Approved,Issued") {
				t.Errorf("kubectl get csr: a bootstrap request not Approved,Issued: %q", line)
			}
		}
	})

	t.Run("each node renews its certificate as system:node:NAME", func(t *testing.T) {
		testwait.For(t, 4*time.Minute, "a renewal by each node", func() (bool, string) {
			csrs, err := c.nodeCSRs(t)
			if err != nil {
				return false, err.Error()
			}
			for _, node := range nodes {
				if !issuedBy(csrs, "system:node:"+node, node) {
					return false, fmt.Sprintf("none yet for %s: %v", node, csrs)
				}
			}
			return true, ""
		})
		must(t, c.kubectl(t, nil, "get", "nodes", "-o", `jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}`), "True True True")
	})

	// The renewal requests went with the first certificates: the
	// gateway's audit log shows each node's POST of its renewal request
	// authenticated by x509 as system:node:NAME, with the serial and
	// fingerprint of the certificate its bootstrap request got.
	t.Run("the audit log shows each node by x509 with its certificate's serial", func(t *testing.T) {
		csrs, err := c.nodeCSRs(t)
		if err != nil {
			t.Fatal(err)
		}
		for _, node := range nodes {
			cert := issuedTo(csrs, bootstrapUser, node)
			if cert == nil {
				t.Fatalf("no certificate issued for %s", node)
			}
			// The serial as openssl prints it.
			certFile := filepath.Join(t.TempDir(), node+".crt")
			writeFile(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}))
			res := runCmd(t, nil, openssl, "x509", "-noout", "-serial", "-in", certFile)
			serial, ok := strings.CutPrefix(strings.TrimSpace(res.stdout), "serial=")
			if res.code != 0 || !ok {
				t.Fatalf("openssl x509 -serial: %+v", res)
			}
			sum := sha256.Sum256(cert.Raw)
			want := auditEntry{Method: "POST", Path: "/apis/certificates.k8s.io/v1/certificatesigningrequests", User: "system:node:" + node, Authenticator: "x509", CertSerial: serial, CredentialID: "X509SHA256=" + hex.EncodeToString(sum[:])}
			testwait.For(t, 10*time.Second, "an audit line of "+node+"'s certificate "+serial, func() (bool, string) {
				data, err := os.ReadFile(audit)
				if err != nil {
					return false, err.Error()
				}
				for line := range strings.SplitSeq(string(data), "\n") {
					var got auditEntry
					if json.Unmarshal([]byte(line), &got) == nil && got == want {
						return true, ""
					}
				}
				return false, fmt.Sprintf("no line %+v in %d bytes", want, len(data))
			})
		}
	})
	c.stop(t)
}

// auditEntry is what the node bootstrap test reads of an audit line.
type auditEntry struct {
	Method        string `json:"method"`
	Path          string `json:"path"`
	User          string `json:"user"`
	Authenticator string `json:"authenticator"`
	CertSerial    string `json:"certSerial"`
	CredentialID  string `json:"credentialID"`
}

func (r nodeCSR) String() string {
	return fmt.Sprintf("%s(by %s for %s, approved %v, issued %v)", r.name, r.requestor, r.cn, r.approved, len(r.certificate) > 0)
}
