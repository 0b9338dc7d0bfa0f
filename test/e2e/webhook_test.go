package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubegate/kubegate/internal/testwait"
)

// TestWebhookTokenAuthenticationThroughTheGateway_A9 runs `kubegate up` as
// the TokenReview service and a standalone `kubegate gateway` in front of
// its API server whose only token authenticator is the webhook: a
// service-account token minted by up is authenticated by the gateway only
// through a TokenReview, and kubectl sees the user the review names.
func TestWebhookTokenAuthenticationThroughTheGateway_A9(t *testing.T) {
	kubectl := requireTool(t, "kubectl")
	curl := requireTool(t, "curl")
	dir := t.TempDir()
	c := startUp(t, dir, 0)
	defer c.stop(t)
	pki := func(name string) string { return filepath.Join(dir, "pki", name) }
	m := regexp.MustCompile(`served by the API server on (\S+?),`).FindStringSubmatch(c.stderr.String())
	if m == nil {
		t.Fatalf("kubegate up did not say where its API server is; stderr:\n%s", c.stderr)
	}
	apiServer := "https://" + m[1]

	// The reviewer: a service account bound to system:auth-delegator, as
	// a kube-apiserver's webhook credential would be.
	must(t, c.kubectl(t, nil, "-n", "kube-system", "create", "serviceaccount", "token-reviewer"), "created")
	must(t, c.kubectl(t, nil, "create", "clusterrolebinding", "token-reviewer", "--clusterrole=system:auth-delegator",
		"--serviceaccount=kube-system:token-reviewer"), "created")
	res := c.kubectl(t, nil, "-n", "kube-system", "create", "token", "token-reviewer", "--duration=1h")
	must(t, res, "ey")
	reviewerToken := strings.TrimSpace(res.stdout)

	// The webhook configuration: up's URL with the TokenReview path, its
	// CA, and the reviewer's token.
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubegate-up"] = &clientcmdapi.Cluster{Server: c.server + "/apis/authentication.k8s.io/v1/tokenreviews", CertificateAuthority: pki("ca.crt")}
	cfg.AuthInfos["token-reviewer"] = &clientcmdapi.AuthInfo{Token: reviewerToken}
	cfg.Contexts["webhook"] = &clientcmdapi.Context{Cluster: "kubegate-up", AuthInfo: "token-reviewer"}
	cfg.CurrentContext = "webhook"
	gwDir := t.TempDir()
	webhookConfig := filepath.Join(gwDir, "webhook.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, webhookConfig); err != nil {
		t.Fatal(err)
	}

	// The gateway: no client CA, no token file, no service-account keys;
	// the webhook is the only way in.
	port := freePort(t)
	stderr := &testwait.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	gw := exec.CommandContext(ctx, kubegateBin, "gateway",
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--tls-cert-file", pki("apiserver.crt"), "--tls-private-key-file", pki("apiserver.key"),
		"--authentication-token-webhook-config-file", webhookConfig,
		"--authentication-token-webhook-version", "v1",
		"--authentication-token-webhook-cache-ttl", "2s",
		"--upstream", apiServer, "--upstream-ca-file", pki("ca.crt"),
		"--proxy-client-cert-file", pki("front-proxy-client.crt"), "--proxy-client-key-file", pki("front-proxy-client.key"),
		"--verbose")
	gw.Stderr = stderr
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = gw.Wait() }()
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	waitHealthy(t, curl, base, pki("ca.crt"), stderr)

	// The user: a service account of up with a token from kubectl create
	// token, allowed to view the default namespace.
	must(t, c.kubectl(t, nil, "create", "serviceaccount", "dev"), "created")
	must(t, c.kubectl(t, nil, "create", "rolebinding", "dev-view", "--clusterrole=view", "--serviceaccount=default:dev"), "created")
	res = c.kubectl(t, nil, "create", "token", "dev", "--duration=1h")
	must(t, res, "ey")
	devToken := strings.TrimSpace(res.stdout)

	empty := filepath.Join(gwDir, "empty.kubeconfig")
	writeFile(t, empty, []byte("apiVersion: v1\nkind: Config\n"))
	asToken := func(token string, args ...string) result {
		t.Helper()
		return runCmd(t, nil, kubectl, append([]string{"--kubeconfig", empty, "--server", base,
			"--certificate-authority", pki("ca.crt"), "--token", token}, args...)...)
	}

	t.Run("kubectl auth whoami shows the reviewed user", func(t *testing.T) {
		res := asToken(devToken, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups} {.status.userInfo.extra}")
		must(t, res, "system:serviceaccount:default:dev ")
		for _, want := range []string{`"system:serviceaccounts"`, `"system:serviceaccounts:default"`, `"system:authenticated"`, "authentication.kubernetes.io/credential-id"} {
			if !strings.Contains(res.stdout, want) {
				t.Errorf("whoami %q lacks %s", res.stdout, want)
			}
		}
	})

	t.Run("the gateway names the webhook as the authenticator", func(t *testing.T) {
		res := runCmd(t, nil, curl, "-sS", "--cacert", pki("ca.crt"), "-H", "Authorization: Bearer "+devToken, base+"/kubegate/whoami")
		if !strings.Contains(res.stdout, `"authenticator": "webhook"`) || !strings.Contains(res.stdout, `"username": "system:serviceaccount:default:dev"`) {
			t.Fatalf("whoami: %s %s; want the webhook's user", res.stdout, res.stderr)
		}
	})

	t.Run("RBAC sees the reviewed user", func(t *testing.T) {
		must(t, asToken(devToken, "get", "configmaps", "-n", "default"), "kube-root-ca.crt")
		res := asToken(devToken, "get", "configmaps", "-n", "kube-system")
		if res.code == 0 || !strings.Contains(res.stderr, `User "system:serviceaccount:default:dev" cannot list resource "configmaps"`) {
			t.Fatalf("got exit %d, stderr %q; want Forbidden for system:serviceaccount:default:dev", res.code, res.stderr)
		}
	})

	t.Run("a bad token is refused and never logged", func(t *testing.T) {
		const bad = "not-a-token-of-anyone-4f3e2d1c"
		res := asToken(bad, "auth", "whoami")
		if res.code == 0 || !strings.Contains(res.stderr, "Unauthorized") {
			t.Fatalf("got exit %d, stderr %q; want Unauthorized", res.code, res.stderr)
		}
		if strings.Contains(stderr.String(), bad) {
			t.Fatalf("the gateway logged the token:\n%s", stderr)
		}
	})

	t.Run("a deleted service account's token stops working once the caches expire", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "delete", "serviceaccount", "dev"), "deleted")
		// The webhook's answer is kept 2 s, the gateway's token cache 10 s.
		testwait.For(t, 60*time.Second, "the revoked token refused", func() (bool, string) {
			res := asToken(devToken, "auth", "whoami")
			return res.code != 0 && strings.Contains(res.stderr, "Unauthorized"), fmt.Sprintf("exit %d: %s%s", res.code, res.stdout, res.stderr)
		})
	})

	if strings.Contains(stderr.String(), devToken) || strings.Contains(stderr.String(), reviewerToken) {
		t.Fatalf("the gateway logged a token:\n%s", stderr)
	}
}
