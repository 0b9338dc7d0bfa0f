package conformance

import "encoding/json"

// certificateOps are the ClusterTrustBundle and PodCertificateRequest
// operations (H.8): a bundle's name after its signer, its PEM, the
// attest check and the immutable signer; a pod certificate request's
// names, key and expiry, its immutable spec and the status rules. They
// end with the certificates.k8s.io entry of aggregated discovery, the OpenAPI schemas
// and the deletion of what they made.
func certificateOps() []op {
	const (
		bundles  = "/apis/certificates.k8s.io/v1/clustertrustbundles"
		requests = "/apis/certificates.k8s.io/v1/namespaces/dra-pcr/podcertificaterequests"
		// A P-256 CA certificate and a certificate that is no CA, PEM.
		caPEM   = "-----BEGIN CERTIFICATE-----\nMIIBhzCCAS2gAwIBAgIUeBTiTi5yzE76p2glvZC8cIOchE8wCgYIKoZIzj0EAwIw\nGTEXMBUGA1UEAwwOY29uZm9ybWFuY2UtY2EwHhcNMjYxMjA3MDAxMzA3WhcNMzYx\nMjA0MDAxMzA3WjAZMRcwFQYDVQQDDA5jb25mb3JtYW5jZS1jYTBZMBMGByqGSM49\nAgEGCCqGSM49AwEHA0IABJu89M/csHRMpxUtALRpeED+1RL0925Q99+qZZJPC+Bi\nLx+nAyHUQgtPTMbjUCymNslNPjn9k6pED72IQuHyOMCjUzBRMB0GA1UdDgQWBBQF\nsESV4is2Jck9kXDULB+edi054jAfBgNVHSMEGDAWgBQFsESV4is2Jck9kXDULB+e\ndi054jAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCICMvt/NZ9WLj\nEB1VssKUtRxjqLIW9cDKTSrJrcRJca8DAiEA9BGDU/ZFNwQCmtZH2EAVfx/QsZnH\nOIYOLNfu04+JODw=\n-----END CERTIFICATE-----\n"
		leafPEM = "-----BEGIN CERTIFICATE-----\nMIIBbzCCARagAwIBAgIUCFOU9MSG6+ZLJL1ycucK89I0LYAwCgYIKoZIzj0EAwIw\nDzENMAsGA1UEAwwEbGVhZjAeFw0yNjEyMDcwMDEzMDdaFw0zNjEyMDQwMDEzMDda\nMA8xDTALBgNVBAMMBGxlYWYwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAR+gFIr\n6lmOR5JPONnXLs9T6xBtHnkkIjylOG5bupa1WPTphRc9qS39L0MyTzQRSLLa3mRq\nZDYn3/rF601Aw8pVo1AwTjAdBgNVHQ4EFgQUZ1u+C8s5l4Xc2Zl9pvkJnrA+zu0w\nHwYDVR0jBBgwFoAUZ1u+C8s5l4Xc2Zl9pvkJnrA+zu0wDAYDVR0TAQH/BAIwADAK\nBggqhkjOPQQDAgNHADBEAiAsSf+0M0PjMqIeUxo/G9COyb51OT6KbRA2McUZCicO\nFAIgLCH2B2r5p+Qz7V3+MA1FXeoKciGJ1Lh0m5y4cinGNAU=\n-----END CERTIFICATE-----\n"
		// A PKCS#10 request for a P-256 key, base64 of its DER.
		stub = "MIHKMHECAQAwDzENMAsGA1UEAwwEc3R1YjBZMBMGByqGSM49AgEGCCqGSM49AwEHA0IABH6AUivqWY5Hkk842dcuz1PrEG0eeSQiPKU4blu6lrVY9OmFFz2pLf0vQzJPNBFIstreZGpkNiff+sXrTUDDylWgADAKBggqhkjOPQQDAgNJADBGAiEA+xfjC6B0ac9+d3000ta0XOcbwLhjhgDUhN2Mb7XIF1ECIQChVIBLrH/9QBtarlTY1ydEAlj7QUvXmGa4tLG9t1LTpw=="
	)
	quote := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	}
	bundle := func(name, signer, pem string) string {
		return `{"apiVersion":"certificates.k8s.io/v1","kind":"ClusterTrustBundle","metadata":{"name":"` + name + `"},"spec":{"signerName":"` + signer +
			`","trustBundle":` + quote(pem) + `}}`
	}
	pcr := func(name, spec string) string {
		return `{"apiVersion":"certificates.k8s.io/v1","kind":"PodCertificateRequest","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	const pcrSpec = `{"signerName":"example.com/pods","podName":"p","podUID":"pod-uid","serviceAccountName":"default","serviceAccountUID":"sa-uid",` +
		`"nodeName":"node-a","nodeUID":"node-uid","maxExpirationSeconds":86400,"stubPKCS10Request":"` + stub + `"}`
	cond := func(typ string) string {
		return `{"type":"` + typ + `","status":"True","reason":"Test","message":"by the test","lastTransitionTime":"2026-01-02T03:04:05Z"}`
	}
	return []op{
		{name: "ctb/create", method: "POST", path: bundles, body: bundle("plain", "", caPEM)},
		{name: "ctb/create-signer", method: "POST", path: bundles, body: bundle("example.com:signer:one", "example.com/signer", caPEM)},
		{name: "kubectl/create-ctb-no-attest", kubectl: []string{"create", "-f", "-", "--as=nobody"},
			stdin: bundle("example.com:signer:two", "example.com/signer", caPEM)},
		{name: "ctb/create-bad-prefix", method: "POST", path: bundles, body: bundle("other:one", "example.com/signer", caPEM)},
		{name: "ctb/create-colon-no-signer", method: "POST", path: bundles, body: bundle("a:b", "", caPEM)},
		{name: "ctb/create-bad-signer", method: "POST", path: bundles, body: bundle("example:one", "example", caPEM)},
		{name: "ctb/create-not-ca", method: "POST", path: bundles, body: bundle("notca", "", leafPEM+caPEM)},
		{name: "ctb/create-duplicate", method: "POST", path: bundles, body: bundle("dup", "", caPEM+caPEM)},
		{name: "ctb/create-empty", method: "POST", path: bundles, body: bundle("empty", "", "")},
		{name: "ctb/create-bad-block", method: "POST", path: bundles, body: bundle("badblock", "", "-----BEGIN THING-----\naGVsbG8=\n-----END THING-----\n")},
		{name: "ctb/get", method: "GET", path: bundles + "/example.com:signer:one"},
		{name: "ctb/table", method: "GET", path: bundles, accept: tableAccept},
		{name: "kubectl/get-clustertrustbundles", kubectl: []string{"get", "clustertrustbundles"}},
		{name: "ctb/update-unconditional", method: "PUT", path: bundles + "/plain", body: bundle("plain", "", caPEM)},
		{name: "ctb/update-signer", method: "PATCH", path: bundles + "/example.com:signer:one", contentType: mergePatch,
			body: `{"spec":{"signerName":"example.com/other"}}`},
		{name: "ctb/update-labels", method: "PATCH", path: bundles + "/example.com:signer:one", contentType: mergePatch,
			body: `{"metadata":{"labels":{"a":"b"}}}`},

		{name: "pcr/namespace", method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"dra-pcr"}}`},
		{name: "pcr/create", method: "POST", path: requests, body: pcr("r1", pcrSpec)},
		{name: "pcr/create-invalid", method: "POST", path: requests,
			body: pcr("bad", `{"signerName":"kubernetes.io/x","podName":"P_1","serviceAccountName":"","nodeName":"n.","maxExpirationSeconds":90000,"stubPKCS10Request":"aGVsbG8="}`)},
		{name: "pcr/create-no-expiration", method: "POST", path: requests,
			body: pcr("noexp", `{"signerName":"example.com/pods","podName":"p","podUID":"u","serviceAccountName":"s","serviceAccountUID":"u","nodeName":"n","nodeUID":"u"}`)},
		{name: "pcr/create-no-key", method: "POST", path: requests,
			body: pcr("nokey", `{"signerName":"example.com/pods","podName":"p","podUID":"u","serviceAccountName":"s","serviceAccountUID":"u","nodeName":"n","nodeUID":"u","maxExpirationSeconds":3600}`)},
		{name: "pcr/get", method: "GET", path: requests + "/r1"},
		{name: "pcr/table", method: "GET", path: requests, accept: tableAccept},
		{name: "kubectl/get-podcertificaterequests", kubectl: []string{"get", "podcertificaterequests", "-n", "dra-pcr"}},
		{name: "pcr/update-spec", method: "PATCH", path: requests + "/r1", contentType: mergePatch, body: `{"spec":{"podName":"q"}}`},
		{name: "pcr/update-unconditional", method: "PUT", path: requests + "/r1", body: pcr("r1", pcrSpec)},
		{name: "pcr/status-bad", method: "PATCH", path: requests + "/r1/status", contentType: mergePatch,
			body: `{"status":{"conditions":[` + cond("Approved") + `,` + cond("Denied") + `,` + cond("Failed") + `]}}`},
		{name: "pcr/status-denied-with-chain", method: "PATCH", path: requests + "/r1/status", contentType: mergePatch,
			body: `{"status":{"conditions":[` + cond("Denied") + `],"certificateChain":"x"}}`},
		{name: "pcr/status-denied", method: "PATCH", path: requests + "/r1/status", contentType: mergePatch,
			body: `{"status":{"conditions":[` + cond("Denied") + `]}}`},
		{name: "pcr/status-after-denied", method: "PATCH", path: requests + "/r1/status", contentType: mergePatch,
			body: `{"status":{"conditions":[` + cond("Failed") + `]}}`},
		{name: "pcr/table-denied", method: "GET", path: requests + "/r1", accept: tableAccept},

		{name: "certificates/discovery-aggregated", method: "GET", path: "/apis", accept: discoveryV2, project: aggregatedGroup("certificates.k8s.io")},
		{name: "certificates/openapi-schemas", method: "GET", path: "/openapi/v3/apis/certificates.k8s.io/v1",
			project: openAPISchemas("components", "io.k8s.api.certificates.v1.ClusterTrustBundle", "io.k8s.api.certificates.v1.PodCertificateRequest")},
		{name: "pcr/delete-namespace", method: "DELETE", path: "/api/v1/namespaces/dra-pcr"},
		{name: "ctb/delete", method: "DELETE", path: bundles + "/plain"},
		{name: "ctb/delete-collection", method: "DELETE", path: bundles},
	}
}
