package conformance

import "strings"

// csrOps are the CertificateSigningRequest operations (H.1): creation with
// the requester's identity, validation, the subject restriction, the
// approval and status subresources, and kubectl get csr and kubectl
// certificate approve|deny. The approved requests name a signer of their
// own, which no controller signs for. The discovery of
// certificates.k8s.io/v1 is compared for the CSR's entries here, and as a
// whole by discovery/certificates-v1.
func csrOps() []op {
	const (
		csrs = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
		// CN=alice, O=devs and CN=mallory, O=system:masters (P-256),
		// base64 of their PEM.
		alice   = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIWk1JR0JBZ0VBTUI4eERqQU1CZ05WQkFNTUJXRnNhV05sTVEwd0N3WURWUVFLREFSa1pYWnpNRmt3RXdZSApLb1pJemowQ0FRWUlLb1pJemowREFRY0RRZ0FFK0J5UGg4elBUbnkxc0VRMzhZQ1M4VFl1SUZsZ2I0andlSmMrCkxJMXhhN3JsRlBRMjJkSWRJWVB6czhveVJYTjZoQjdzTXp2Qm5Pem9OOEYyem45R1o2QUFNQW9HQ0NxR1NNNDkKQkFNQ0EwY0FNRVFDSUcrUkQwMU5jeDNpUWtKUDNBb3lzSml0K3BLNkFuRWFBYWcvTmJ5WlB4M1NBaUF1ak5mSQphVXI4MElyMEh3dXVDaHZZS2ZKeFQveTQzVG5DMGlSaXMvaWJsZz09Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo="
		mallory = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIbU1JR05BZ0VBTUNzeEVEQU9CZ05WQkFNTUIyMWhiR3h2Y25reEZ6QVZCZ05WQkFvTURuTjVjM1JsYlRwdApZWE4wWlhKek1Ga3dFd1lIS29aSXpqMENBUVlJS29aSXpqMERBUWNEUWdBRWRlbmdpSm1oRFdqaWxXeHowdGFkCm9scEJ5YWVFUVl6MUdhaHBuQ21IUENWc21kMmV6MnR2NkF0TnN4U0sxd3ZkeXZobjk0dHllRXFpZUtuRnc5dGgKNXFBQU1Bb0dDQ3FHU000OUJBTUNBMGdBTUVVQ0lRQ2duclJNVHBGSHdpcnlDWlpRQ1AwZXdwT2NkaGNQRHhMYQp5bXdSNUhXdmdnSWdFb3MybXgzWjNOdHhMdlhhL3lCd1llb1R5OFBKT0JkQkJBa2k1bHdqQjRzPQotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K"
		own     = "example.com/conformance"
		client  = "kubernetes.io/kube-apiserver-client"
	)
	csr := func(name, request, signer, extra string) string {
		return `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"` + name + `"},"spec":{"request":"` +
			request + `","signerName":"` + signer + `","usages":["digital signature","client auth"]` + extra + `}}`
	}
	cond := func(typ string) string {
		return `{"type":"` + typ + `","status":"True","reason":"Test","message":"by the test"}`
	}
	return []op{
		{name: "discovery/certificates-v1-csr", method: "GET", path: "/apis/certificates.k8s.io/v1", project: csrEntries},
		{name: "csr/create", method: "POST", path: csrs, body: csr("alice", alice, own,
			`,"expirationSeconds":3600,"username":"root","uid":"0","groups":["system:masters"],"extra":{"a":["b"]}`)},
		{name: "csr/create-client", method: "POST", path: csrs, body: csr("alice-client", alice, client, "")},
		{name: "csr/create-exists", method: "POST", path: csrs, body: csr("alice", alice, own, "")},
		{name: "csr/create-status-dropped", method: "POST", path: csrs,
			body: `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"with-status"},"spec":{"request":"` + alice +
				`","signerName":"` + own + `","usages":["client auth"]},"status":{"conditions":[` + cond("Approved") + `],"certificate":"eA=="}}`},
		{name: "csr/create-masters", method: "POST", path: csrs, body: csr("mallory", mallory, client, "")},
		{name: "csr/create-masters-own-signer", method: "POST", path: csrs, body: csr("mallory", mallory, own, "")},
		{name: "csr/create-short", method: "POST", path: csrs, body: csr("short", alice, own, `,"expirationSeconds":599`)},
		{name: "csr/create-not-pem", method: "POST", path: csrs, body: csr("notpem", "aGVsbG8=", own, "")},
		{name: "csr/create-no-signer", method: "POST", path: csrs, body: csr("nosigner", alice, "", "")},
		{name: "csr/create-bad-signers", method: "POST", path: csrs, body: csr("badsigner", alice, "Example/a/b", "")},
		{name: "csr/create-bad-signer-labels", method: "POST", path: csrs, body: csr("badsigner", alice, "Example.com/Signer_1", "")},
		{name: "csr/create-legacy", method: "POST", path: csrs, body: csr("legacy", alice, "kubernetes.io/legacy-unknown", "")},
		{name: "csr/create-bad-usages", method: "POST", path: csrs,
			body: `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"usages"},"spec":{"request":"` + alice +
				`","signerName":"` + own + `","usages":["flying","client auth","client auth"]}}`},
		{name: "csr/create-no-usages", method: "POST", path: csrs,
			body: `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"usages"},"spec":{"request":"` + alice +
				`","signerName":"` + own + `"}}`},
		{name: "csr/get", method: "GET", path: csrs + "/alice"},
		{name: "csr/list-signer", method: "GET", path: csrs + q("fieldSelector", "spec.signerName="+client)},
		{name: "csr/table", method: "GET", path: csrs + "/alice", accept: tableAccept},
		{name: "kubectl/get-csr", kubectl: []string{"get", "csr"}},
		{name: "csr/update-spec-kept", method: "PATCH", path: csrs + "/alice", contentType: mergePatch,
			body: `{"metadata":{"labels":{"a":"b"}},"spec":{"signerName":"example.com/other","usages":["server auth"]}}`},
		{name: "csr/main-cannot-approve", method: "PATCH", path: csrs + "/alice", contentType: mergePatch,
			body: `{"status":{"conditions":[` + cond("Approved") + `]}}`},
		{name: "csr/status-cannot-approve", method: "PATCH", path: csrs + "/alice/status", contentType: mergePatch,
			body: `{"status":{"conditions":[` + cond("Approved") + `]}}`},
		{name: "csr/approval-both", method: "PATCH", path: csrs + "/alice/approval", contentType: mergePatch,
			body: `{"status":{"conditions":[` + cond("Approved") + `,` + cond("Denied") + `]}}`},
		{name: "csr/approval-false", method: "PATCH", path: csrs + "/alice/approval", contentType: mergePatch,
			body: `{"status":{"conditions":[{"type":"Approved","status":"False"}]}}`},
		{name: "csr/approval-get", method: "GET", path: csrs + "/alice/approval"},
		{name: "kubectl/certificate-approve-nobody", kubectl: []string{"certificate", "approve", "alice", "--as=nobody"}},
		{name: "kubectl/certificate-approve", kubectl: []string{"certificate", "approve", "alice"}},
		{name: "kubectl/certificate-approve-again", kubectl: []string{"certificate", "approve", "alice"}},
		{name: "kubectl/certificate-deny-approved", kubectl: []string{"certificate", "deny", "alice"}},
		{name: "csr/approval-remove", method: "PUT", path: csrs + "/alice/approval",
			body: `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"alice"},"spec":{"request":"` + alice +
				`","signerName":"` + own + `","usages":["client auth"]}}`},
		{name: "csr/status-not-pem", method: "PATCH", path: csrs + "/alice/status", contentType: mergePatch,
			body: `{"status":{"certificate":"eA=="}}`},
		{name: "csr/status-failed", method: "PATCH", path: csrs + "/alice/status", contentType: mergePatch,
			body: `{"status":{"conditions":[` + cond("Approved") + `,` + cond("Failed") + `]}}`},
		{name: "csr/table-list", method: "GET", path: csrs, accept: tableAccept},
		{name: "kubectl/certificate-deny", kubectl: []string{"certificate", "deny", "with-status"}},
		{name: "kubectl/get-csr-after", kubectl: []string{"get", "csr"}},
		{name: "csr/delete", method: "DELETE", path: csrs + "/with-status"},
	}
}

// csrEntries keeps the entries of certificatesigningrequests and its
// subresources in a discovery document.
func csrEntries(doc any) any {
	m, _ := doc.(map[string]any)
	rs, _ := m["resources"].([]any)
	var out []any
	for _, r := range rs {
		if e, _ := r.(map[string]any); e != nil {
			if name, _ := e["name"].(string); name == "certificatesigningrequests" || strings.HasPrefix(name, "certificatesigningrequests/") {
				out = append(out, e)
			}
		}
	}
	return out
}
