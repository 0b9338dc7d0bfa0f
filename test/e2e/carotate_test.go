package e2e

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/internal/testwait"
)

// TestCARotationUnderLoadWithKubegateUp_H6 rotates the cluster CA, the
// front-proxy CA and the service-account key of a running kubegate up,
// phase by phase, while a load generator asks the gateway who it is as
// three users: a client certificate (admin.conf), a static token and a
// service-account token. Its clients take the files each phase rewrites
// (bundles, re-signed certificates, a token of the new key) as a
// redistributed kubeconfig would give them, and not one of their requests
// may fail. After each phase the load's service account switches to a
// token the gateway has not seen, so that the gateway's keys of the
// moment, not its token cache, answer for it. Between phases kubectl keeps working; after reissue openssl
// verifies the new leaves against pki/ca.crt and the gateway serves the
// re-signed certificate; after drop-old a client certificate of the old
// CA, and a token of the old key, are refused with 401.
func TestCARotationUnderLoadWithKubegateUp_H6(t *testing.T) {
	requireTool(t, "kubectl")
	curl := requireTool(t, "curl")
	openssl := requireTool(t, "openssl")
	dir := filepath.Join(t.TempDir(), "cluster")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "tokens.csv"), []byte("load-static-3f9c2a7d81e4b6,load-static,load-static-uid\n"))
	c := startUp(t, dir, 0)
	pki := func(n string) string { return filepath.Join(dir, "pki", n) }
	keep := t.TempDir()

	// The admin's certificate and key from before the rotation.
	cfg, err := clientcmd.LoadFromFile(filepath.Join(dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	oldCert, oldKey := filepath.Join(keep, "old-admin.crt"), filepath.Join(keep, "old-admin.key")
	for _, u := range cfg.AuthInfos {
		writeFile(t, oldCert, u.ClientCertificateData)
		writeFile(t, oldKey, u.ClientKeyData)
	}
	// status is the HTTP status of GET /api with the old admin certificate.
	status := func() string {
		res := runCmd(t, nil, curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", pki("ca.crt"),
			"--cert", oldCert, "--key", oldKey, c.server+"/api")
		return res.stdout
	}
	if got := status(); got != "200" {
		t.Fatalf("the admin certificate before the rotation: status %s", got)
	}

	// token mints a token of the default service account signed with the
	// old key, or, with newKey, waits until the API server signs with the
	// new one. Each is new to the gateway, so it is checked against the
	// gateway's keys of the moment and not answered from its token cache
	// (10 s, A.0): every check of a key set below uses an unseen token.
	var oldKid string
	token := func(newKey bool) string {
		t.Helper()
		var tok string
		testwait.For(t, 30*time.Second, fmt.Sprintf("a token of the default service account (new key %v)", newKey), func() (bool, string) {
			res := c.kubectl(t, nil, "create", "token", "default")
			tok = strings.TrimSpace(res.stdout)
			if oldKid == "" {
				oldKid = kid(t, tok)
			}
			return res.code == 0 && (kid(t, tok) != oldKid) == newKey, "kid " + kid(t, tok) + res.stderr
		})
		return tok
	}
	oldToken := token(false)
	tokenWorks := func(what, token string) {
		t.Helper()
		if user, _, res := c.whoamiAs(t, token); user != "system:serviceaccount:default:default" {
			t.Fatalf("%s: whoami %q, %+v", what, user, res)
		}
	}
	adminWorks := func(what string) {
		t.Helper()
		must(t, c.kubectl(t, nil, "get", "namespace", "default", "-o", "name"), "namespace/default")
		must(t, c.kubectl(t, nil, "auth", "whoami"), "kubernetes-admin")
	}
	// rotate runs a phase; the load's requests from then on are counted
	// as after it.
	var load *rotationLoad
	rotate := func(phase string, flags ...string) {
		t.Helper()
		res := kubegate(t, append([]string{"ca", "rotate", "--dir", dir}, flags...)...)
		if res.code != 0 || !strings.Contains(res.stderr, phase+" done for cluster, front-proxy, sa") {
			t.Fatalf("ca rotate (%s): %+v", phase, res)
		}
		load.setPhase("after " + phase)
	}

	// The load's token users trust pki/ca.crt and read their token from a
	// file, as a pod's projected token is read.
	saToken := filepath.Join(keep, "sa.token")
	writeFile(t, saToken, []byte(token(false)))
	tokenUser := func(name, tokenFile string) string {
		conf := filepath.Join(keep, name+".conf")
		writeFile(t, conf, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: kubegate, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: %s, user: {tokenFile: %q}}]
contexts: [{name: kubegate, context: {cluster: kubegate, user: %s}}]
current-context: kubegate
`, c.server, pki("ca.crt"), name, tokenFile, name))
		return conf
	}
	staticToken := filepath.Join(keep, "static.token")
	writeFile(t, staticToken, []byte("load-static-3f9c2a7d81e4b6"))
	staticConf, saConf := tokenUser("static-token", staticToken), tokenUser("sa-token", saToken)
	load = startRotationLoad(t,
		loadIdentity{name: "client-cert", kubeconfig: filepath.Join(dir, "admin.conf"), user: "kubernetes-admin",
			files: []string{filepath.Join(dir, "admin.conf")}},
		loadIdentity{name: "static-token", kubeconfig: staticConf, user: "load-static",
			files: []string{staticConf, staticToken, pki("ca.crt")}},
		loadIdentity{name: "sa-token", kubeconfig: saConf, user: "system:serviceaccount:default:default",
			files: []string{saConf, saToken, pki("ca.crt")}},
	)
	load.waitCurrent(t, "the files before the rotation")

	rotate("trust-both")
	writeFile(t, saToken, []byte(token(false)))
	load.waitCurrent(t, "the bundles of trust-both and an unseen token")
	adminWorks("after trust-both")
	tokenWorks("an old-key token after trust-both", oldToken)
	// Unseen tokens of the old key, for after reissue and after drop-old.
	oldSpares := []string{token(false), token(false), token(false)}
	res := kubegate(t, "pki", "check", "--dir", dir)
	if res.code != 0 || !strings.Contains(res.stdout, "warning: pki/rotation.json: the rotation of cluster, front-proxy, sa stopped with trust-both done") {
		t.Errorf("pki check between phases: %+v", res)
	}

	rotate("reissue")
	// The gateway serves the re-signed certificate once it reloaded it:
	// a client trusting only the new CA gets through.
	testwait.For(t, 10*time.Second, "the gateway serving a certificate of the new CA", func() (bool, string) {
		res := runCmd(t, nil, curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", pki("rotation/ca.crt"),
			"--cert", oldCert, "--key", oldKey, c.server+"/api")
		return res.stdout == "200", res.stdout + res.stderr
	})
	adminWorks("after reissue")
	// Both keys verify: an unseen token of the old key works, for the
	// load too.
	tokenWorks("an old-key token after reissue", oldSpares[0])
	writeFile(t, saToken, []byte(oldSpares[1]))
	load.waitCurrent(t, "the re-signed certificates and an unseen token of the old key")
	if got := status(); got != "200" {
		t.Errorf("the old admin certificate between reissue and drop-old: status %s, want 200 (both CAs trusted)", got)
	}
	// New tokens are signed with the new key once the API server reloaded
	// it. The load's service account gets one, as a kubelet refreshes a
	// projected token: every user of the load has taken its re-signed
	// kubeconfig and a token of the new key before the old CA and key go.
	tokenWorks("a new-key token after reissue", token(true))
	writeFile(t, saToken, []byte(token(true)))
	load.waitCurrent(t, "a token of the new key")
	cfg, err = clientcmd.LoadFromFile(filepath.Join(dir, "admin.conf"))
	if err != nil {
		t.Fatal(err)
	}
	newAdmin := filepath.Join(keep, "new-admin.crt")
	for _, u := range cfg.AuthInfos {
		writeFile(t, newAdmin, u.ClientCertificateData)
	}
	for bundle, leaves := range map[string][]string{
		pki("ca.crt"):             {pki("apiserver.crt"), pki("apiserver-kubelet-client.crt"), newAdmin},
		pki("front-proxy-ca.crt"): {pki("front-proxy-client.crt")},
	} {
		for _, leaf := range leaves {
			if res := runCmd(t, nil, openssl, "verify", "-CAfile", bundle, leaf); res.code != 0 || !strings.Contains(res.stdout, ": OK") {
				t.Errorf("openssl verify -CAfile %s %s: %+v", filepath.Base(bundle), filepath.Base(leaf), res)
			}
			// Issued by the new CA: it verifies against the new one alone.
			newCA := pki("rotation/" + filepath.Base(bundle))
			if res := runCmd(t, nil, openssl, "verify", "-CAfile", newCA, leaf); res.code != 0 {
				t.Errorf("openssl verify -CAfile rotation/%s %s: %+v", filepath.Base(bundle), filepath.Base(leaf), res)
			}
		}
	}

	// The test does not wait --min-token-age for tokens to be refreshed:
	// the old token is meant to be refused.
	rotate("drop-old", "--force")
	writeFile(t, saToken, []byte(token(true)))
	load.waitCurrent(t, "the bundles of drop-old and an unseen token of the new key")
	testwait.For(t, 10*time.Second, "the old admin certificate refused", func() (bool, string) {
		got := status()
		return got == "401", "status " + got
	})
	adminWorks("after drop-old")
	tokenWorks("a new-key token after drop-old", token(true))
	testwait.For(t, 20*time.Second, "a token of the old key refused", func() (bool, string) {
		user, _, res := c.whoamiAs(t, oldSpares[2])
		return res.code != 0 && strings.Contains(res.stderr, "Unauthorized"), user + res.stderr
	})
	// The controllers restarted with their re-signed kubeconfig: they
	// still act, and publish the new bundle in kube-root-ca.crt.
	must(t, c.kubectl(t, nil, "create", "deployment", "web", "--image=nginx"), "deployment.apps/web created")
	testwait.For(t, 30*time.Second, "the deployment's ReplicaSet", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "replicasets", "-l", "app=web", "-o", "name")
		return res.code == 0 && strings.Contains(res.stdout, "replicaset.apps/web-"), res.stdout + res.stderr
	})
	bundle, err := os.ReadFile(pki("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 30*time.Second, "kube-root-ca.crt holding the new CA only", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "configmap", "kube-root-ca.crt", "-o", "jsonpath={.data.ca\\.crt}")
		return res.stdout == string(bundle), res.stdout + res.stderr
	})
	if _, err := os.Stat(pki("rotation")); err == nil {
		t.Error("pki/rotation is still there after drop-old")
	}
	load.waitCurrent(t, "the files after the rotation")
	load.stop()
	if requests, failures := load.report(t); failures != 0 {
		t.Errorf("%d of %d requests of the load failed", failures, requests)
	}
	if least := load.perPhase(); least < 10 {
		t.Errorf("an identity made only %d requests in one phase; the load did not run through the rotation", least)
	}
	res = kubegate(t, "pki", "check", "--dir", dir)
	if res.code != 0 || strings.Contains(res.stdout, "warning") {
		t.Errorf("pki check after the rotation: %+v", res)
	}
	c.stop(t)
}

// kid returns the key ID in a JWT's header.
func kid(t *testing.T, token string) string {
	t.Helper()
	head, _, _ := strings.Cut(token, ".")
	data, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		Kid string `json:"kid"`
	}
	_ = json.Unmarshal(data, &h)
	return h.Kid
}
