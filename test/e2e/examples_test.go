package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubegate/kubegate/test/oidcprovider"
)

// repoRoot is the repository the tests run from.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// runExample runs examples/NAME/run.sh with the test's kubegate binary,
// with env added to its environment, and returns everything it printed
// (stdout and stderr interleaved) and its exit code. The script's work
// directory goes under a test directory that must be empty again
// afterwards: every example cleans up after itself.
func runExample(t *testing.T, name string, env []string) (string, int) {
	t.Helper()
	tmp := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(repoRoot(t), "examples", name, "run.sh"))
	cmd.Env = append(append(kubectlEnv(t), "KUBEGATE="+kubegateBin, "TMPDIR="+tmp), env...)
	// On timeout, SIGTERM lets the script's trap stop what it started.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	code := 0
	if err := cmd.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run examples/%s: %v\n%s", name, err, out.String())
		}
		code = ee.ExitCode()
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("examples/%s left %d entries in its temporary directory, such as %s", name, len(left), left[0].Name())
	}
	return out.String(), code
}

// TestExamples runs every examples/*/run.sh and checks the lines that show
// each step worked. Each script exits non-zero when a step fails; the
// patterns make sure the steps printed what the README says they do.
func TestExamples(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "kubectl", "openssl"} {
		requireTool(t, tool)
	}
	tests := []struct {
		name    string
		example string                      // examples/EXAMPLE/run.sh; "": name
		env     func(t *testing.T) []string // what else the script's environment holds; nil: nothing
		require func(t *testing.T)          // what else the example needs; nil: nothing
		want    []string                    // regular expressions, matched against the whole output in order
		check   func(t *testing.T, out string)
	}{
		{
			name: "walkthrough",
			want: []string{
				`kubegate is up: the API is at https://127\.0\.0\.1:\d+ \(gateway\)`,
				`Subject: +O = kubeadm:cluster-admins, CN = kubernetes-admin`,
				`Not after: +\d{4}-\d\d-\d\d .* \(valid, 36\dd \d+h left\)`,
				`Groups: +kubeadm:cluster-admins`,
				`Result: +verified against CA of cluster "kubernetes"`,
				`"serverAddressByClientCIDRs":\[\{"clientCIDR":"0\.0\.0\.0/0","serverAddress":"127\.0\.0\.1:\d+"\}\]`,
				`HTTP 201`,
				`"phase":"Pending"`,
				`pod/app condition met`,
				`(?m)^app +1/1 +Running +0 +\S+ +10\.244\.\d+\.\d+ +node-[123] `,
				`(?m)^node-1 +Ready `,
				`(?m)^node-3 +Ready `,
				`pod default/app: scheduled to (node-[123]) \(3 nodes, 3 evaluated, 3 feasible\)`,
				`NODE +TaintToleration\(3\) +NodeAffinity\(2\) +NodeResourcesFit\(1\) .* TOTAL`,
				`(?m)^node-[123] \* `,
				// The app as a Deployment.
				`pod "app" deleted`,
				`deployment\.apps/app created`,
				`deployment "app" successfully rolled out`,
				`(?m)^app +3/3 +3 +3 `,
				`(?m)^app-` + podHash + ` +3 +3 +3 `,
				`(?m)^(app-` + podHash + `-[a-z0-9]{5} +1/1 +Running +0 +\S+ +10\.244\.\d+\.\d+ +node-[123] .*\n){3}`,
				`pod default/app-` + podHash + `-[a-z0-9]{5}: scheduled to node-[123] \(3 nodes, 3 evaluated, 3 feasible\)`,
				`PodTopologySpread\(2\) .* TOTAL\n`,
				`(?m)^node-[123] \* +0/100/300 +- +\d+/\d+/\d+ +\d+/100/200 `,
				// The rolling update and its history.
				`deployment\.apps/app image updated`,
				`deployment "app" successfully rolled out`,
				`NAME +REVISION +DESIRED +IMAGE\napp-` + podHash + ` +1 +0 +\S+/app:latest\napp-` + podHash + ` +2 +3 +\S+/app:v2\n`,
				`REVISION +CHANGE-CAUSE\n1 +image app:latest\n2 +image app:v2\n`,
				// The rollback: revision 1's ReplicaSet is revision 3.
				`deployment\.apps/app rolled back`,
				`deployment "app" successfully rolled out`,
				`NAME +REVISION +DESIRED +IMAGE\napp-` + podHash + ` +2 +0 +\S+/app:v2\napp-` + podHash + ` +3 +3 +\S+/app:latest\n`,
				`REVISION +CHANGE-CAUSE\n2 +image app:v2\n3 +image app:latest\n`,
				`(?m)^(app-` + podHash + `-[a-z0-9]{5} +1/1 +Running +0 +\S+ +10\.244\.\d+\.\d+ +node-[123] .*\n){3}`,
			},
			check: checkWalkthroughDeployment,
		},
		{
			name: "hard-way",
			want: []string{
				`\$ kubegate pki init --dir hard-way --config cluster.yaml\n`,
				`hard-way/kubelet-worker-2\.conf`,
				`17 certificates checked, no problems`,
				`DNS:kubernetes\.default\.svc\.cluster\.local`,
				`IP Address:10\.32\.0\.1, IP Address:203\.0\.113\.10`,
				`CN = system:node:worker-0`,
				`CN = system:node:worker-2`,
				`wrote hard-way/kube-proxy\.conf \(user system:kube-proxy, groups \[system:node-proxier\]`,
				`pki/apiserver\.crt: SANs lack kubernetes\.default\.svc\.cluster\.local`,
				`pki/apiserver\.crt: SANs lack the service IP 10\.32\.0\.1 \(first IP of 10\.32\.0\.0/24\)`,
				`scheduler\.conf:system:kube-scheduler: "system:system:kube-scheduler" looks like a mistyped "system:kube-scheduler"`,
				`\(exit code 1, as expected\)`,
			},
		},
		{
			name: "front-proxy",
			want: frontProxyWant(`kubegate apiserver serving on https://127\.0\.0\.1:\d+`),
		},
		{
			// The same against a real kube-apiserver, which grants the
			// gateway's own identity nothing but what rbac.yaml binds.
			name:    "front-proxy-kube-apiserver",
			example: "front-proxy",
			env:     func(t *testing.T) []string { return []string{"KUBE_BIN=" + kubeBinaries(t)} },
			want:    frontProxyWant(`kube-apiserver serving on https://127\.0\.0\.1:\d+`),
		},
		{
			name: "tokens",
			want: []string{
				`"userInfo":\{"username":"bob"`,
				`GET pods: HTTP 200`,
				`Groups +\[devs qa system:authenticated\]`,
				`configmaps is forbidden: User "bob" cannot create resource "configmaps"`,
				`Signature: +verified with cluster/pki/sa\.pub`,
				`"userInfo":\{"username":"system:serviceaccount:default:builder"`,
				`POST configmap: HTTP 201`,
				`Username +system:serviceaccount:default:builder`,
				`(?m)^from-curl +1 +\S+\n`,
				`GET configmaps: HTTP 200`,
				`configmap/from-kubectl created`,
				// After the restart.
				`kubegate is up`,
				`whoami "\$STATIC"\n"userInfo":\{"username":"bob"`,
				`whoami "\$OFFLINE"\n"userInfo":\{"username":"system:serviceaccount:default:builder"`,
				`whoami "\$REQUESTED"\n"userInfo":\{"username":"system:serviceaccount:default:builder"`,
				`(?m)^from-curl +1 +\S+\nfrom-kubectl +1 +\S+\n`,
				`auth can-i list pods\nyes\n`,
				`offline token: HTTP 401`,
				`requested token: HTTP 401`,
			},
		},
		{
			name:    "oidc",
			require: func(t *testing.T) { oidcprovider.Require(t) },
			want: []string{
				`"issuer": "https://127\.0\.0\.1:\d+/dex"`,
				`kubegate up --dir cluster --secure-port \d+ --authentication-config authentication-config\.yaml`,
				`kubegate is up`,
				`rolebinding\.rbac\.authorization\.k8s\.io/developers-read created`,
				`"email": "alice@example\.com"`,
				`"groups": \[\s+"developers",\s+"readers"\s+\]`,
				`(?m)^Username +oidc:alice@example\.com\n`,
				`(?m)^UID +CghhbGljZS1pZBIFbG9jYWw\n`, // Dex's subject for user ID alice-id
				`(?m)^Groups +\[oidc:developers oidc:readers system:authenticated\]\n`,
				`(?m)^Extra: example\.com/login +\[dex:alice\]\n`,
				`(?m)^blue\n`,
				`(?m)^Username +oidc:bob@example\.com\n`,
				`(?m)^Groups +\[oidc:auditors system:authenticated\]\n`,
				`User "oidc:bob@example\.com" cannot get resource "configmaps"`,
				`wrote oidc\.conf \(OIDC user oidc, logging in at https://127\.0\.0\.1:\d+/dex with kubectl oidc-login\)`,
				`command: kubectl\n`,
				`interactiveMode: IfAvailable\n`,
			},
		},
		{
			name: "scheduler",
			want: []string{
				`NodePreferAvoidPods\(10000\) +TOTAL`,
				`(?m)^node-1 \* .* 1000290$`,
				`(?m)^node-2 .* 1000280$`,
				`(?m)^node-3 .* 0/0/0 +290$`,
				`current weights`,
				`ImageLocality\(1\) +TOTAL`,
				`(?m)^node-[13] \* .* 590$`,
				`(?m)^node-2 .* 580$`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.require != nil {
				tc.require(t)
			}
			var env []string
			if tc.env != nil {
				env = tc.env(t)
			}
			example := tc.example
			if example == "" {
				example = tc.name
			}
			out, code := runExample(t, example, env)
			if code != 0 {
				t.Fatalf("examples/%s/run.sh exited %d, want 0; output:\n%s", example, code, out)
			}
			rest := out
			for _, w := range tc.want {
				loc := regexp.MustCompile(w).FindStringIndex(rest)
				if loc == nil {
					t.Fatalf("examples/%s: no match for %q after the earlier lines; output:\n%s", tc.name, w, out)
				}
				rest = rest[loc[1]:]
			}
			if tc.check != nil {
				tc.check(t, out)
			}
			if strings.Contains(out, "stopped: the example ran for more than") {
				t.Errorf("examples/%s ran out of time", tc.name)
			}
		})
	}
}

// frontProxyWant is what examples/front-proxy prints, in order, after the
// line that says its API server serves: rbac.yaml applied for the
// gateway's own identity, then a client certificate, a static token and a
// service-account token through the gateway in request-header mode and in
// impersonate mode.
func frontProxyWant(serving string) []string {
	return []string{
		serving,
		`clusterrole\.rbac\.authorization\.k8s\.io/kubegate-gateway created`,
		`clusterrolebinding\.rbac\.authorization\.k8s\.io/kubegate-gateway created`,
		`role\.rbac\.authorization\.k8s\.io/kubegate-gateway created`,
		`gateway serving on`,
		`"userInfo":\{"username":"kubernetes-admin","groups":\["kubeadm:cluster-admins","system:authenticated"\]`,
		`GET namespaces: HTTP 200`,
		`"userInfo":\{"username":"alice","uid":"alice-uid","groups":\["devs","system:authenticated"\]\}`,
		`GET pods: HTTP 200`,
		`POST pod: HTTP 403`,
		`Username +alice\n`,
		`No resources found in default namespace`,
		`(?m)^no\n\(exit code 1, as expected\)`,
		// The gateway looked the service account up as itself.
		`"userInfo":\{"username":"system:serviceaccount:default:builder","uid":"[0-9a-f-]{36}","groups":\["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"\]`,
		// A client's X-Remote-User: mallory changes nothing.
		`X-Remote-User: mallory' -H 'X-Remote-Group: system:masters'\n"userInfo":\{"username":"kubernetes-admin"`,
		`X-Remote-User: mallory'\n"userInfo":\{"username":"alice"`,
		`impersonating gateway serving on`,
		`"userInfo":\{"username":"alice","uid":"alice-uid","groups":\["devs","system:authenticated"\]\}`,
		`"userInfo":\{"username":"kubernetes-admin","groups":\["kubeadm:cluster-admins","system:authenticated"\],"extra":\{"authentication\.kubernetes\.io/credential-id":\["X509SHA256=`,
		`"userInfo":\{"username":"system:serviceaccount:default:builder"`,
		`No resources found in default namespace`,
	}
}

var (
	kubeOnce sync.Once
	kubeDir  string
	kubeErr  error
)

// kubeBinaries returns the directory of the kube-apiserver and etcd that
// test/conformance/kube/build.sh builds from the module proxy, once per
// machine. When they cannot be built the test is skipped, or fails when
// CI=true, as for any tool a test needs.
func kubeBinaries(t *testing.T) string {
	t.Helper()
	requireTool(t, "go") // build.sh builds with it
	kubeOnce.Do(func() {
		var out, errb bytes.Buffer
		cmd := exec.Command(filepath.Join(repoRoot(t), "test", "conformance", "kube", "build.sh"))
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			kubeErr = fmt.Errorf("test/conformance/kube/build.sh: %v\n%s", err, errb.String())
			return
		}
		kubeDir = strings.TrimSpace(out.String())
	})
	if kubeErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kube-apiserver is required in CI: %v", kubeErr)
		}
		t.Skipf("no kube-apiserver: %v", kubeErr)
	}
	return kubeDir
}

// podHash matches a pod-template-hash: kube's safe encoding of a 32-bit
// hash, in an alphabet without vowels or look-alike characters.
const podHash = `[bcdfghjklmnpqrstvwxz2456789]{6,10}`

// checkWalkthroughDeployment checks what the walkthrough's regular
// expressions cannot: that the Deployment's three pods went to three
// different nodes, both at first and after the rollback, and that the
// rollback scaled up the first ReplicaSet rather than making a new one.
func checkWalkthroughDeployment(t *testing.T, out string) {
	t.Helper()
	pods := regexp.MustCompile(`(?m)^app-(` + podHash + `)-[a-z0-9]{5} +1/1 +Running .* (node-[123]) `)
	blocks := regexp.MustCompile(`(?m)^\$ kubectl get pods -o wide .*\n(?:.*\n)+?(?:\$|\z)`).FindAllString(out, -1)
	if len(blocks) != 3 {
		t.Fatalf("examples/walkthrough: %d listings of pods, want 3 (the lone pod, the Deployment's, after the rollback)", len(blocks))
	}
	var hashes []string
	for _, b := range blocks[1:] {
		nodes := map[string]bool{}
		hash := ""
		for _, m := range pods.FindAllStringSubmatch(b, -1) {
			nodes[m[2]] = true
			hash = m[1]
		}
		if len(nodes) != 3 {
			t.Errorf("examples/walkthrough: the Deployment's pods are on %d nodes, want 3, one each:\n%s", len(nodes), b)
		}
		hashes = append(hashes, hash)
	}
	if hashes[0] != hashes[1] {
		t.Errorf("examples/walkthrough: the pods after the rollback have pod-template-hash %q, want the first ReplicaSet's %q", hashes[1], hashes[0])
	}
}
