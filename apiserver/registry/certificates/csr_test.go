package certificates_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/apiserver/registry/certificates"
	"github.com/kubegate/kubegate/internal/testpki"
)

// The servers of these tests run without admission plugins: the kind's
// own rules are under test here, the certificate plugins' in
// apiserver/admission.

// testCSR returns a PEM certificate request for cn in orgs.
func testCSR(t *testing.T, cn string, orgs ...string) []byte {
	t.Helper()
	return testpki.CSR(t, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}})
}

// testCert returns a PEM self-signed certificate.
func testCert(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func newTestCSR(t *testing.T, name string) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: testCSR(t, "alice", "devs"), SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}}}
}

func ptr32(v int32) *int32 { return &v }

// wantCSRInvalid checks that err is a 422 whose message holds want, or nil
// when want is "".
func wantCSRInvalid(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("err = %v, want none", err)
	case want == "":
	case !apierrors.IsInvalid(err):
		t.Fatalf("err = %v, want 422 holding %q", err, want)
	case !strings.Contains(err.Error(), want):
		t.Fatalf("err = %v, want it to hold %q", err, want)
	}
}

func TestCSRCreateValidation_H1(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	csrs := srv.Client.CertificatesV1().CertificateSigningRequests()
	badSig := func(t *testing.T) []byte {
		block, _ := pem.Decode(testCSR(t, "alice"))
		block.Bytes[len(block.Bytes)-3] ^= 0xff
		return pem.EncodeToMemory(block)
	}
	cases := []struct {
		name   string
		mutate func(*certificatesv1.CertificateSigningRequest)
		want   string
	}{
		{"valid", func(*certificatesv1.CertificateSigningRequest) {}, ""},
		{"not PEM", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("hello") },
			"spec.request: Invalid value: \"aGVsbG8=\": PEM block type must be CERTIFICATE REQUEST"},
		{"a certificate", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = testCert(t) }, "PEM block type must be CERTIFICATE REQUEST"},
		{"bad DER", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte{0x30, 0x03, 1, 2, 3}})
		}, "spec.request: Invalid value"},
		{"bad signature", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = badSig(t) }, "x509: ECDSA verification failure"},
		{"no signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" }, "spec.signerName: Required value"},
		{"signer without path", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com" },
			`spec.signerName: Invalid value: "example.com": must be a fully qualified domain and path of the form 'example.com/signer-name'`},
		{"signer with two slashes", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com/a/b" }, "must be a fully qualified domain"},
		{"signer one-label domain", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example/signer" },
			"should be a domain with at least two segments separated by dots"},
		{"signer upper case", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "Example.com/signer" }, `validating label "Example"`},
		{"signer bad path", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com/Signer_1" }, `validating label "Signer_1"`},
		{"legacy signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "kubernetes.io/legacy-unknown" },
			"the legacy signerName is not allowed via this API version"},
		{"custom signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example.com/my-signer" }, ""},
		{"no usages", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil }, "spec.usages: Required value"},
		{"unknown usage", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = []certificatesv1.KeyUsage{"flying"} },
			`spec.usages[0]: Unsupported value: "flying": supported values: "any", "cert sign"`},
		{"duplicate usage", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []certificatesv1.KeyUsage{"client auth", "client auth"}
		}, `spec.usages[1]: Duplicate value: "client auth"`},
		{"expirationSeconds 599", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = ptr32(599) },
			"spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)"},
		{"expirationSeconds 600", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = ptr32(600) }, ""},
		// The kubelet signers' subject rules are the signer's and the
		// approver's, not validation's (H.2).
		{"kubelet client signer, any subject", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.SignerName = certificatesv1.KubeAPIServerClientKubeletSignerName
		}, ""},
		{"kubelet serving signer, any subject", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.SignerName = certificatesv1.KubeletServingSignerName
		}, ""},
		{"status in the body is dropped", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: "Approved", Status: "True"}}
			c.Status.Certificate = []byte("junk")
		}, ""},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			csr := newTestCSR(t, "csr-"+string(rune('a'+i)))
			tc.mutate(csr)
			got, err := csrs.Create(context.Background(), csr, metav1.CreateOptions{})
			wantCSRInvalid(t, err, tc.want)
			if err == nil && (len(got.Status.Conditions) != 0 || len(got.Status.Certificate) != 0) {
				t.Errorf("status = %+v, want it empty", got.Status)
			}
		})
	}
}

func TestCSRUsernameComesFromTheRequester_H1(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	csrs := srv.Client.CertificatesV1().CertificateSigningRequests()
	csr := newTestCSR(t, "spoof")
	csr.Spec.Username, csr.Spec.UID = "root", "0"
	csr.Spec.Groups = []string{"system:masters", "evil"}
	csr.Spec.Extra = map[string]certificatesv1.ExtraValue{"scopes": {"all"}}
	got, err := csrs.Create(context.Background(), csr, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Username != "admin" || got.Spec.UID != "" || strings.Join(got.Spec.Groups, ",") != "system:masters,system:authenticated" || got.Spec.Extra != nil {
		t.Errorf("spec identity = %q %q %v %v, want the requester's (admin, no uid, its groups, no extra)", got.Spec.Username, got.Spec.UID, got.Spec.Groups, got.Spec.Extra)
	}
}

// csrUpdate is one update of a fresh, stored request.
type csrUpdate struct {
	name string
	// before is an approval update made first (nil: none).
	before func(*certificatesv1.CertificateSigningRequest)
	sub    string // "", "status", "approval"
	mutate func(*certificatesv1.CertificateSigningRequest)
	want   string
	check  func(t *testing.T, got *certificatesv1.CertificateSigningRequest)
}

func approve(c *certificatesv1.CertificateSigningRequest) {
	c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved,
		Status: corev1.ConditionTrue, Reason: "KubectlApprove"})
}

func deny(c *certificatesv1.CertificateSigningRequest) {
	c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateDenied,
		Status: corev1.ConditionTrue, Reason: "KubectlDeny"})
}

func TestCSRUpdates_H1(t *testing.T) {
	cert := testCert(t)
	cases := []csrUpdate{
		{name: "spec is kept", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []certificatesv1.KeyUsage{"server auth"}
			c.Spec.SignerName = "example.com/other"
			c.Spec.Username = "root"
		}, check: func(t *testing.T, got *certificatesv1.CertificateSigningRequest) {
			if got.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName || got.Spec.Usages[0] != "digital signature" || got.Spec.Username != "admin" {
				t.Errorf("spec = %+v, want the stored one", got.Spec)
			}
		}},
		{name: "labels change", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Labels = map[string]string{"a": "b"} },
			check: func(t *testing.T, got *certificatesv1.CertificateSigningRequest) {
				if got.Labels["a"] != "b" {
					t.Errorf("labels = %v", got.Labels)
				}
			}},
		{name: "main update cannot approve", mutate: approve, check: func(t *testing.T, got *certificatesv1.CertificateSigningRequest) {
			if len(got.Status.Conditions) != 0 {
				t.Errorf("conditions = %v, want none", got.Status.Conditions)
			}
		}},
		{name: "approve", sub: "approval", mutate: approve, check: func(t *testing.T, got *certificatesv1.CertificateSigningRequest) {
			c := got.Status.Conditions
			if len(c) != 1 || c[0].Type != "Approved" || c[0].LastUpdateTime.IsZero() || c[0].LastTransitionTime.IsZero() {
				t.Errorf("conditions = %+v, want Approved with timestamps", c)
			}
			if certificates.CSRCondition(got) != "Approved" {
				t.Errorf("condition column = %q, want Approved", certificates.CSRCondition(got))
			}
		}},
		{name: "approve and deny", sub: "approval", mutate: func(c *certificatesv1.CertificateSigningRequest) { approve(c); deny(c) },
			want: `status.conditions: Invalid value: "{conditions[{\"type\": \"Approved\"}], conditions[{\"type\": \"Denied\"}]}": must specify at most one of`},
		{name: "deny an approved request", before: approve, sub: "approval", mutate: deny, want: "must specify at most one of"},
		{name: "remove Approved", before: approve, sub: "approval", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Status.Conditions = nil },
			want: `status.conditions: Forbidden: updates may not remove a condition of type "Approved"`},
		{name: "approved twice", sub: "approval", mutate: func(c *certificatesv1.CertificateSigningRequest) { approve(c); approve(c) },
			want: `status.conditions[1].type: Duplicate value: "Approved"`},
		{name: "Approved False", sub: "approval", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			approve(c)
			c.Status.Conditions[0].Status = corev1.ConditionFalse
		}, want: `status.conditions[0].status: Unsupported value: "False": supported values: "True"`},
		{name: "condition without a type", sub: "approval", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Status: corev1.ConditionTrue}}
		}, want: "status.conditions[0].type: Required value"},
		{name: "status cannot approve", sub: "status", mutate: approve,
			want: `status.conditions: Forbidden: updates may not add a condition of type "Approved"`},
		{name: "status cannot remove Approved", before: approve, sub: "status", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Status.Conditions = nil },
			want: `updates may not remove a condition of type "Approved"`},
		{name: "status keeps the Approved condition", before: approve, sub: "status", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions[0].Reason = "Changed"
		}, check: func(t *testing.T, got *certificatesv1.CertificateSigningRequest) {
			if got.Status.Conditions[0].Reason != "KubectlApprove" {
				t.Errorf("reason = %q, want the stored KubectlApprove", got.Status.Conditions[0].Reason)
			}
		}},
		{name: "issue", before: approve, sub: "status", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = cert },
			check: func(t *testing.T, got *certificatesv1.CertificateSigningRequest) {
				if certificates.CSRCondition(got) != "Approved,Issued" {
					t.Errorf("condition column = %q, want Approved,Issued", certificates.CSRCondition(got))
				}
			}},
		// As in kube-apiserver, validation does not look for approval:
		// signers sign only approved requests.
		{name: "certificate before approval", sub: "status", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = cert }},
		{name: "certificate not PEM", sub: "status", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = []byte("junk") },
			want: `status.certificate: Invalid value: "<certificate data>": must contain at least one CERTIFICATE PEM block`},
		{name: "certificate with a key block", sub: "status", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})
		}, want: `only CERTIFICATE PEM blocks are allowed, found "PRIVATE KEY"`},
		{name: "main update cannot issue", mutate: func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = cert },
			check: func(t *testing.T, got *certificatesv1.CertificateSigningRequest) {
				if len(got.Status.Certificate) != 0 {
					t.Error("certificate set through the object itself")
				}
			}},
		{name: "approval cannot issue", sub: "approval", mutate: func(c *certificatesv1.CertificateSigningRequest) { approve(c); c.Status.Certificate = cert },
			check: func(t *testing.T, got *certificatesv1.CertificateSigningRequest) {
				if len(got.Status.Certificate) != 0 || certificates.CSRCondition(got) != "Approved" {
					t.Errorf("condition %q with a certificate of %d bytes, want Approved and none", certificates.CSRCondition(got), len(got.Status.Certificate))
				}
			}},
		{name: "Failed", before: approve, sub: "status", mutate: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateFailed,
				Status: corev1.ConditionTrue, Reason: "SignerError"})
		}, check: func(t *testing.T, got *certificatesv1.CertificateSigningRequest) {
			if certificates.CSRCondition(got) != "Approved,Failed" {
				t.Errorf("condition column = %q, want Approved,Failed", certificates.CSRCondition(got))
			}
		}},
	}
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	cs := srv.Client
	csrs := cs.CertificatesV1().CertificateSigningRequests()
	ctx := context.Background()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stored, err := csrs.Create(ctx, newTestCSR(t, "up-"+string(rune('a'+i))), metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.before != nil {
				tc.before(stored)
				if stored, err = csrs.UpdateApproval(ctx, stored.Name, stored, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			tc.mutate(stored)
			got, err := updateCSR(ctx, cs, tc.sub, stored)
			wantCSRInvalid(t, err, tc.want)
			if err == nil && tc.check != nil {
				tc.check(t, got)
			}
		})
	}
}

func updateCSR(ctx context.Context, cs kubernetes.Interface, sub string, csr *certificatesv1.CertificateSigningRequest) (*certificatesv1.CertificateSigningRequest, error) {
	csrs := cs.CertificatesV1().CertificateSigningRequests()
	switch sub {
	case "status":
		return csrs.UpdateStatus(ctx, csr, metav1.UpdateOptions{})
	case "approval":
		return csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{})
	}
	return csrs.Update(ctx, csr, metav1.UpdateOptions{})
}

func TestCSRTable_H1(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	csr := newTestCSR(t, "x")
	csr.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Second))
	csr.Spec.Username = "alice"
	csr.Spec.ExpirationSeconds = ptr32(3600)
	got := certificates.CSRTable.Cells(csr, now)
	want := []any{"x", "90s", "kubernetes.io/kube-apiserver-client", "alice", "60m", "Pending"}
	if len(got) != len(want) {
		t.Fatalf("cells = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("cell %d = %v, want %v", i, got[i], want[i])
		}
	}
	csr.Spec.ExpirationSeconds = nil
	deny(csr)
	if got := certificates.CSRTable.Cells(csr, now); got[4] != "<none>" || got[5] != "Denied" {
		t.Errorf("cells = %v, want <none> and Denied", got)
	}
}

// managedSets returns each managedFields entry of obj as its subresource
// and the JSON of its field set.
func managedSets(obj metav1.Object) map[string]string {
	out := map[string]string{}
	for _, e := range obj.GetManagedFields() {
		out[e.Subresource] = e.FieldsV1.GetRawString()
	}
	return out
}

func TestCSRManagedFieldsLeaveOutWhatTheServerResets_H1(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	csrs := srv.Client.CertificatesV1().CertificateSigningRequests()
	ctx := context.Background()

	// Only a name and a spec: no writer owns anything, and the updates
	// that follow start no managedFields.
	plain, err := csrs.Create(ctx, newTestCSR(t, "plain"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := managedSets(plain); len(m) != 0 {
		t.Fatalf("created without labels: managedFields %v, want none", m)
	}
	plain.Labels = map[string]string{"a": "b"}
	if plain, err = csrs.Update(ctx, plain, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	approve(plain)
	if plain, err = csrs.UpdateApproval(ctx, plain.Name, plain, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if m := managedSets(plain); plain.Labels["a"] != "b" || len(m) != 0 {
		t.Fatalf("labelled and approved: labels %v, managedFields %v, want a=b and none", plain.Labels, m)
	}

	// With a label: the creator owns the label, not the spec; the
	// approval owns the conditions, the status the certificate.
	labelled := newTestCSR(t, "labelled")
	labelled.Labels = map[string]string{"x": "y"}
	labelled.Status.Certificate = testCert(t)
	if labelled, err = csrs.Create(ctx, labelled, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	approve(labelled)
	labelled.Status.Certificate = testCert(t)
	if labelled, err = csrs.UpdateApproval(ctx, labelled.Name, labelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	labelled.Status.Certificate = testCert(t)
	labelled.Status.Conditions = append(labelled.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateFailed,
		Status: corev1.ConditionTrue, Reason: "SignerError"})
	if labelled, err = csrs.UpdateStatus(ctx, labelled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	m := managedSets(labelled)
	for sub, want := range map[string]struct{ has, not []string }{
		"":         {has: []string{`"f:labels":{".":{},"f:x":{}}`}, not: []string{"f:spec", "f:status"}},
		"approval": {has: []string{`"f:conditions"`, `k:{\"type\":\"Approved\"}`}, not: []string{"f:spec", "f:certificate", "f:metadata"}},
		"status":   {has: []string{`"f:status":{"f:certificate":{}}`}, not: []string{"f:spec", "f:conditions", "f:metadata"}},
	} {
		got, ok := m[sub]
		if !ok {
			t.Errorf("managedFields %v: no entry for subresource %q", m, sub)
			continue
		}
		for _, s := range want.has {
			if !strings.Contains(got, s) {
				t.Errorf("subresource %q owns %s, want it to hold %s", sub, got, s)
			}
		}
		for _, s := range want.not {
			if strings.Contains(got, s) {
				t.Errorf("subresource %q owns %s, want no %s", sub, got, s)
			}
		}
	}
}

func TestCSRNameIsAPathSegmentOnceTheRestIsValid_H1(t *testing.T) {
	srv := apiservertest.Start(t, apiservertest.WithAdmission())
	csrs := srv.Client.CertificatesV1().CertificateSigningRequests()
	cases := []struct {
		name, generateName string
		usages             bool
		want, notWant      string
	}{
		{name: "a%b", usages: true, want: `metadata.name: Invalid value: "a%b": may not contain '%'`},
		{name: "a%b/c", usages: true, want: `[metadata.name: Invalid value: "a%b/c": may not contain '/', metadata.name: Invalid value: "a%b/c": may not contain '%']`},
		{name: "..", usages: true, want: `metadata.name: Invalid value: "..": may not be '..'`},
		{generateName: "a/", usages: true, want: `metadata.generateName: Invalid value: "a/": may not contain '/'`},
		// As kube-apiserver, only the kind's own error when there is one.
		{name: "a%b", want: "spec.usages: Required value", notWant: "metadata.name"},
	}
	for _, tc := range cases {
		csr := newTestCSR(t, tc.name)
		csr.GenerateName = tc.generateName
		if !tc.usages {
			csr.Spec.Usages = nil
		}
		_, err := csrs.Create(context.Background(), csr, metav1.CreateOptions{})
		wantCSRInvalid(t, err, tc.want)
		if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
			t.Errorf("name %q: err = %v, want no %s", tc.name, err, tc.notWant)
		}
	}
}
