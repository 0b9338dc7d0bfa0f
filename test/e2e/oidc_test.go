package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/test/oidcprovider"
)

// oidcUsers are the provider's accounts: two users in different groups.
var oidcUsers = []oidcprovider.User{
	{Email: "alice@example.com", Name: "alice", ID: "alice-id", Groups: []string{"developers", "readers"}},
	{Email: "bob@example.com", Name: "bob", ID: "bob-id", Groups: []string{"auditors"}},
}

// oidcAuthConfig is an AuthenticationConfiguration with one JWT issuer,
// the provider, whose claims map to a Kubernetes user: the email with an
// "oidc:" prefix as the name, the groups with the same prefix, the
// subject as the UID and an extra value computed in CEL.
func oidcAuthConfig(p *oidcprovider.Provider) string {
	ca := "      " + strings.ReplaceAll(strings.TrimSpace(string(p.CAPEM)), "\n", "\n      ")
	return fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: %s
    audiences: [%s]
    certificateAuthority: |
%s
  claimValidationRules:
  - expression: claims.email_verified == true
    message: the email address must be verified
  claimMappings:
    username:
      claim: email
      prefix: "oidc:"
    groups:
      claim: groups
      prefix: "oidc:"
    uid:
      claim: sub
    extra:
    - key: example.com/login
      valueExpression: "claims.name + '@' + claims.iss.split('/')[2]"
  userValidationRules:
  - expression: "!user.username.startsWith('system:')"
    message: "the username must not start with system:"
`, p.Issuer, p.ClientID, ca)
}

// getTokenPlugin stands in for kubelogin (kubectl oidc-login get-token),
// which is not on the module proxy: a client-go credential plugin that
// takes kubelogin's flags, logs in with the password grant as kubelogin
// does with --grant-type=password (the user and password from the
// environment here), and prints the ID token as an ExecCredential.
const getTokenPlugin = `#!/bin/sh
set -eu
[ "$1" = get-token ] || { echo "usage: get-token --oidc-issuer-url=URL --oidc-client-id=ID ..." >&2; exit 2; }
shift
issuer= id= secret= scope=openid ca=$(mktemp)
trap 'rm -f "$ca"' EXIT
for a in "$@"; do
	case $a in
	--oidc-issuer-url=*) issuer=${a#*=} ;;
	--oidc-client-id=*) id=${a#*=} ;;
	--oidc-client-secret=*) secret=${a#*=} ;;
	--oidc-extra-scope=*) scope="$scope ${a#*=}" ;;
	--certificate-authority-data=*) printf %s "${a#*=}" | base64 -d >"$ca" ;;
	*) echo "get-token: unknown flag $a" >&2; exit 2 ;;
	esac
done
resp=$(curl -sS --fail --max-time 10 --cacert "$ca" -u "$id:$secret" \
	--data-urlencode grant_type=password --data-urlencode "username=$OIDC_USERNAME" \
	--data-urlencode "password=$OIDC_PASSWORD" --data-urlencode "scope=$scope" "$issuer/token")
token=$(printf %s "$resp" | sed -n 's/.*"id_token":"\([^"]*\)".*/\1/p')
[ -n "$token" ] || { echo "get-token: no id_token in the answer" >&2; exit 1; }
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s"}}\n' "$token"
`

// whoami is what kubectl auth whoami -o json prints.
type whoami struct {
	Status struct {
		UserInfo authenticationv1.UserInfo `json:"userInfo"`
	} `json:"status"`
}

// TestOIDCUsersThroughTheGateway_A8 logs two users in at a real OpenID
// provider (Dex, its own process, over HTTPS) and uses their ID tokens
// with kubectl and client-go through the gateway of `kubegate up`, which
// reads the provider from an AuthenticationConfiguration: the mapped user
// name, groups, UID and extra, RBAC on the groups, and a rotation of the
// provider's signing key.
func TestOIDCUsersThroughTheGateway_A8(t *testing.T) {
	requireTool(t, "kubectl")
	p := oidcprovider.Start(t, oidcprovider.Options{ClientID: "kubernetes", Users: oidcUsers})

	files := t.TempDir()
	authConfig := filepath.Join(files, "authentication-config.yaml")
	writeFile(t, authConfig, []byte(oidcAuthConfig(p)))
	dir := filepath.Join(t.TempDir(), "cluster")
	c := startUp(t, dir, 0, "--authentication-config", authConfig)
	serverCA := filepath.Join(dir, "pki", "ca.crt")

	// kubeconfig writes a token user's kubeconfig with kubegate kubeconfig
	// create, the token read from standard input.
	kubeconfig := func(t *testing.T, name, token string) string {
		t.Helper()
		path := filepath.Join(files, name+".conf")
		res := runCmd(t, []byte(token+"\n"), kubegateBin, "kubeconfig", "create", "--user", name, "--token", "-",
			"--server", c.server, "--ca", serverCA, "--out", path, "--force")
		if res.code != 0 {
			t.Fatalf("kubeconfig create --token: %+v", res)
		}
		return path
	}
	clientFor := func(t *testing.T, conf string) *kubernetes.Clientset {
		t.Helper()
		cfg, err := clientcmd.BuildConfigFromFlags("", conf)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}

	tokens := map[string]string{}
	confs := map[string]string{}
	for _, u := range oidcUsers {
		tokens[u.Name] = p.MustToken(t, u.Email)
		confs[u.Name] = kubeconfig(t, u.Name, tokens[u.Name])
	}
	host := strings.TrimPrefix(p.Issuer, "https://")
	host, _, _ = strings.Cut(host, "/")
	want := map[string]authenticationv1.UserInfo{
		"alice": {
			Username: "oidc:alice@example.com",
			UID:      oidcprovider.Subject("alice-id"),
			Groups:   []string{"oidc:developers", "oidc:readers", "system:authenticated"},
			Extra:    map[string]authenticationv1.ExtraValue{"example.com/login": {"alice@" + host}},
		},
		"bob": {
			Username: "oidc:bob@example.com",
			UID:      oidcprovider.Subject("bob-id"),
			Groups:   []string{"oidc:auditors", "system:authenticated"},
			Extra:    map[string]authenticationv1.ExtraValue{"example.com/login": {"bob@" + host}},
		},
	}
	sameUser := func(got, want authenticationv1.UserInfo) bool {
		if got.Username != want.Username || got.UID != want.UID || !slices.Equal(got.Groups, want.Groups) || len(got.Extra) != len(want.Extra) {
			return false
		}
		for k, v := range want.Extra {
			if !slices.Equal(got.Extra[k], v) {
				return false
			}
		}
		return true
	}

	t.Run("kubectl auth whoami shows the mapped identity", func(t *testing.T) {
		for _, name := range []string{"alice", "bob"} {
			res := c.kubectl(t, nil, "--kubeconfig", confs[name], "auth", "whoami", "-o", "json")
			if res.code != 0 {
				t.Fatalf("%s: kubectl auth whoami: exit %d: %s\ngateway:\n%s\ndex:\n%s", name, res.code, res.stderr, c.stderr, p.Log())
			}
			var got whoami
			if err := json.Unmarshal([]byte(res.stdout), &got); err != nil {
				t.Fatalf("%s: %v\n%s", name, err, res.stdout)
			}
			if !sameUser(got.Status.UserInfo, want[name]) {
				t.Errorf("%s:\n got %+v\nwant %+v", name, got.Status.UserInfo, want[name])
			}
		}
	})

	t.Run("client-go sees the same identity", func(t *testing.T) {
		for _, name := range []string{"alice", "bob"} {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			r, err := clientFor(t, confs[name]).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			cancel()
			if err != nil {
				t.Fatalf("%s: SelfSubjectReview: %v", name, err)
			}
			if !sameUser(r.Status.UserInfo, want[name]) {
				t.Errorf("%s:\n got %+v\nwant %+v", name, r.Status.UserInfo, want[name])
			}
		}
	})

	t.Run("RBAC binds the provider's groups", func(t *testing.T) {
		must(t, c.kubectl(t, nil, "create", "configmap", "team-settings", "--from-literal=color=blue"), "configmap/team-settings created")
		must(t, c.kubectl(t, nil, "create", "role", "configmap-reader", "--verb=get,list", "--resource=configmaps"), "role.rbac.authorization.k8s.io/configmap-reader created")
		must(t, c.kubectl(t, nil, "create", "rolebinding", "developers-read", "--role=configmap-reader", "--group=oidc:developers"),
			"rolebinding.rbac.authorization.k8s.io/developers-read created")
		testwait.For(t, 20*time.Second, "alice (oidc:developers) can list configmaps", func() (bool, string) {
			res := c.kubectl(t, nil, "--kubeconfig", confs["alice"], "auth", "can-i", "list", "configmaps")
			return res.code == 0 && strings.TrimSpace(res.stdout) == "yes", res.stdout + res.stderr
		})
		must(t, c.kubectl(t, nil, "--kubeconfig", confs["alice"], "get", "configmap", "team-settings", "-o", "jsonpath={.data.color}"), "blue")
		res := c.kubectl(t, nil, "--kubeconfig", confs["bob"], "auth", "can-i", "list", "configmaps")
		if res.code != 1 || strings.TrimSpace(res.stdout) != "no" {
			t.Errorf("bob (oidc:auditors) can-i list configmaps: exit %d %q %q; want exit 1 and no", res.code, res.stdout, res.stderr)
		}
		res = c.kubectl(t, nil, "--kubeconfig", confs["bob"], "get", "configmap", "team-settings")
		if res.code == 0 || !strings.Contains(res.stderr, `User "oidc:bob@example.com" cannot get resource "configmaps"`) {
			t.Errorf("bob got the configmap: %+v", res)
		}
		// client-go, as each user.
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if _, err := clientFor(t, confs["alice"]).CoreV1().ConfigMaps("default").Get(ctx, "team-settings", metav1.GetOptions{}); err != nil {
			t.Errorf("alice with client-go: %v", err)
		}
		if _, err := clientFor(t, confs["bob"]).CoreV1().ConfigMaps("default").Get(ctx, "team-settings", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("bob with client-go: got %v; want Forbidden", err)
		}
	})

	t.Run("a kubeconfig with a credential plugin logs in", func(t *testing.T) {
		requireTool(t, "curl")
		requireTool(t, "base64")
		plugin := filepath.Join(files, "get-token")
		if err := os.WriteFile(plugin, []byte(getTokenPlugin), 0o755); err != nil {
			t.Fatal(err)
		}
		conf := filepath.Join(files, "plugin.conf")
		res := kubegate(t, "kubeconfig", "create", "--oidc-issuer", p.Issuer, "--oidc-client-id", p.ClientID,
			"--oidc-client-secret", p.ClientSecret, "--oidc-extra-scope", "email", "--oidc-extra-scope", "profile", "--oidc-extra-scope", "groups",
			"--oidc-ca", p.CAFile, "--exec-plugin", plugin, "--server", c.server, "--ca", serverCA, "--out", conf)
		if res.code != 0 {
			t.Fatalf("kubeconfig create --oidc-issuer: %+v", res)
		}
		kubectl := exec.Command("kubectl", "--kubeconfig", conf, "auth", "whoami", "-o", "json")
		kubectl.Env = append(kubectlEnv(t), "OIDC_USERNAME=bob@example.com", "OIDC_PASSWORD="+oidcprovider.Password)
		out, err := kubectl.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("kubectl auth whoami with the plugin: %v: %s", err, stderr)
		}
		var got whoami
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !sameUser(got.Status.UserInfo, want["bob"]) {
			t.Errorf("through the plugin:\n got %+v\nwant %+v", got.Status.UserInfo, want["bob"])
		}
	})

	t.Run("a token with a damaged signature is refused", func(t *testing.T) {
		sig := tokens["bob"][strings.LastIndex(tokens["bob"], ".")+1:]
		flipped := "AAAA"
		if strings.HasPrefix(sig, flipped) {
			flipped = "BBBB"
		}
		checkRefused(t, c.server, serverCA, tokens["bob"][:len(tokens["bob"])-len(sig)]+flipped+sig[4:])
	})

	t.Run("the provider rotates its signing key", func(t *testing.T) {
		oldKID := oidcprovider.KeyID(tokens["alice"])
		p.Restart(t)
		fresh := p.MustToken(t, "alice@example.com")
		if kid := oidcprovider.KeyID(fresh); kid == oldKID {
			t.Fatalf("the new token is signed with the old key %s", kid)
		}
		// A token signed by a key the authenticator has not seen makes it
		// fetch the provider's keys again.
		freshConf := kubeconfig(t, "alice-new", fresh)
		testwait.For(t, 30*time.Second, "the new key's token works", func() (bool, string) {
			res := c.kubectl(t, nil, "--kubeconfig", freshConf, "auth", "whoami", "-o", "json")
			var got whoami
			if res.code != 0 || json.Unmarshal([]byte(res.stdout), &got) != nil {
				return false, res.stderr
			}
			return sameUser(got.Status.UserInfo, want["alice"]), res.stdout
		})
		must(t, c.kubectl(t, nil, "--kubeconfig", freshConf, "get", "configmap", "team-settings", "-o", "name"), "configmap/team-settings")
		// The old key is no longer published: once the authenticator has
		// the new keys and the gateway's 10 s token cache has let go of
		// the old verdict, the old tokens are refused.
		testwait.For(t, 45*time.Second, "the old key's tokens are refused", func() (bool, string) {
			res := c.kubectl(t, nil, "--kubeconfig", confs["alice"], "auth", "whoami")
			return res.code != 0 && strings.Contains(res.stderr, "Unauthorized"), fmt.Sprintf("exit %d %s%s", res.code, res.stdout, res.stderr)
		})
		checkRefused(t, c.server, serverCA, tokens["bob"])
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err := clientFor(t, confs["bob"]).CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) {
			t.Errorf("bob's old token with client-go: got %v; want Unauthorized", err)
		}
	})
}

// checkRefused fails the test unless the gateway answers 401 to token,
// within the token cache's TTL and some.
func checkRefused(t *testing.T, server, caFile, token string) {
	t.Helper()
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}, Timeout: 10 * time.Second}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 45*time.Second, "the token is refused", func() (bool, string) {
		_, err := cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{})
		return apierrors.IsUnauthorized(err), fmt.Sprint(err)
	})
}
