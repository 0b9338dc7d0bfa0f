package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

// whoamiAs runs kubectl auth whoami through c's gateway with only a bearer
// token (--token, a kubeconfig without a user).
func (c *upCluster) whoamiAs(t *testing.T, token string) (user string, groups []string, res result) {
	t.Helper()
	conf := filepath.Join(c.dir, "no-user.conf")
	if _, err := os.Stat(conf); err != nil {
		writeFile(t, conf, fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters: [{name: kubegate, cluster: {server: %q, certificate-authority: %q}}]
contexts: [{name: kubegate, context: {cluster: kubegate}}]
current-context: kubegate
`, c.server, filepath.Join(c.dir, "pki", "ca.crt")))
	}
	return c.whoami(t, "--kubeconfig", conf, "--token", token)
}

// whoami runs kubectl auth whoami -o json with the kubeconfig flags args
// and returns the user and groups it shows, or "" and the result when it
// fails.
func (c *upCluster) whoami(t *testing.T, args ...string) (user string, groups []string, res result) {
	t.Helper()
	res = c.kubectl(t, nil, append(args, "auth", "whoami", "-o", "json")...)
	if res.code != 0 {
		return "", nil, res
	}
	var review struct {
		Status struct {
			UserInfo struct {
				Username string   `json:"username"`
				Groups   []string `json:"groups"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &review); err != nil {
		t.Fatalf("kubectl auth whoami -o json: %v\n%s", err, res.stdout)
	}
	return review.Status.UserInfo.Username, review.Status.UserInfo.Groups, res
}

// A bootstrap token made with kubegate token create --bootstrap
// authenticates through the gateway of kubegate up as system:bootstrap:ID;
// an expired one does not, and deleting its Secret revokes it once the
// caches let go of it (A.10).
func TestBootstrapTokensThroughTheGateway_A10(t *testing.T) {
	requireTool(t, "kubectl")
	curl := requireTool(t, "curl")
	dir := filepath.Join(t.TempDir(), "cluster")
	c := startUp(t, dir, 0)
	admin := filepath.Join(dir, "admin.conf")

	res := kubegate(t, "token", "create", "--bootstrap", "--kubeconfig", admin,
		"--groups", "system:bootstrappers:kubeadm:default-node-token,system:bootstrappers:e2e", "--description", "e2e")
	if res.code != 0 {
		t.Fatalf("token create --bootstrap: %+v", res)
	}
	token := strings.TrimSuffix(res.stdout, "\n")
	id, _, ok := strings.Cut(token, ".")
	if !ok || len(token) != 23 || strings.Contains(token, "\n") {
		t.Fatalf("stdout = %q, want only a token ID.SECRET", res.stdout)
	}
	must(t, c.kubectl(t, nil, "get", "secret", "-n", "kube-system", "bootstrap-token-"+id, "-o", "jsonpath={.type}"), "bootstrap.kubernetes.io/token")

	t.Run("authenticates", func(t *testing.T) {
		user, groups, res := c.whoamiAs(t, token)
		want := []string{"system:bootstrappers", "system:bootstrappers:e2e", "system:bootstrappers:kubeadm:default-node-token", "system:authenticated"}
		if user != "system:bootstrap:"+id || !slices.Equal(groups, want) {
			t.Fatalf("whoami = %q %q (%+v); want system:bootstrap:%s in %q", user, groups, res, id, want)
		}
	})

	status := func(token string) string {
		return runCmd(t, nil, curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", filepath.Join(dir, "pki", "ca.crt"),
			"-H", "Authorization: Bearer "+token, c.server+"/apis/authentication.k8s.io/v1/selfsubjectreviews",
			"-X", "POST", "-H", "Content-Type: application/json",
			"-d", `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`).stdout
	}

	t.Run("expired is refused", func(t *testing.T) {
		secret := func(expires time.Time) []byte {
			return fmt.Appendf(nil, `apiVersion: v1
kind: Secret
metadata:
  name: bootstrap-token-expird
  namespace: kube-system
type: bootstrap.kubernetes.io/token
stringData:
  token-id: expird
  token-secret: 0123456789abcdef
  expiration: %s
  usage-bootstrap-authentication: "true"
`, expires.UTC().Format(time.RFC3339))
		}
		expired := secret(time.Now().Add(-time.Minute))
		must(t, c.kubectl(t, expired, "apply", "-f", "-"), "secret/bootstrap-token-expird created")
		if got := status("expird.0123456789abcdef"); got != "401" {
			t.Errorf("expired token: HTTP %s, want 401", got)
		}
		if _, _, res := c.whoamiAs(t, "expird.0123456789abcdef"); res.code == 0 || !strings.Contains(res.stderr, "Unauthorized") {
			t.Errorf("expired token: kubectl %+v, want Unauthorized", res)
		}
		// The same Secret with a future expiration is accepted: the
		// expiration, not something else, refused it.
		must(t, c.kubectl(t, secret(time.Now().Add(time.Hour)), "apply", "-f", "-"), "secret/bootstrap-token-expird configured")
		testwait.For(t, 40*time.Second, "renewed token accepted", func() (bool, string) {
			got := status("expird.0123456789abcdef")
			return got == "201", "HTTP " + got
		})
	})

	t.Run("deleting the Secret revokes it", func(t *testing.T) {
		if got := status(token); got != "201" {
			t.Fatalf("before deletion: HTTP %s, want 201", got)
		}
		must(t, c.kubectl(t, nil, "delete", "secret", "-n", "kube-system", "bootstrap-token-"+id), "deleted")
		// The token cache keeps a success for 10 s and the gateway's
		// lookup cache its answer for 10 s more.
		testwait.For(t, 40*time.Second, "deleted token refused", func() (bool, string) {
			got := status(token)
			return got == "401", "HTTP " + got
		})
		if _, _, res := c.whoamiAs(t, token); res.code == 0 || !strings.Contains(res.stderr, "Unauthorized") {
			t.Errorf("revoked token: kubectl %+v, want Unauthorized", res)
		}
	})
	c.stop(t)
}

// The binary refuses bad token create --bootstrap flags with one line
// naming the flag and a non-zero exit, before reaching any server (A.10).
func TestTokenCreateBootstrapRefusesBadFlags_A10(t *testing.T) {
	conf := filepath.Join(t.TempDir(), "admin.conf")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--bootstrap"}, "--kubeconfig"},
		{[]string{"--bootstrap", "--kubeconfig", conf, "--groups", "system:nodes"}, `--groups: bootstrap group "system:nodes" is invalid`},
		{[]string{"--bootstrap", "--kubeconfig", conf, "--usages", "everything"}, `--usages: unknown usage "everything"`},
		{[]string{"--bootstrap", "--kubeconfig", conf, "--ttl", "-5m"}, "--ttl"},
	} {
		res := kubegate(t, append([]string{"token", "create"}, tt.args...)...)
		if res.code == 0 || res.stdout != "" || strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 || !strings.Contains(res.stderr, tt.want) {
			t.Errorf("token create %q: exit %d, stdout %q, stderr %q; want failure with one line naming %s", tt.args, res.code, res.stdout, res.stderr, tt.want)
		}
	}
}
