package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kubegate/kubegate/console/ui"
	"github.com/kubegate/kubegate/internal/testwait"
)

// consoleTitle is index.html's title; a script that ran from a CN would
// change it.
const consoleTitle = "kubegate console"

// hostileCN is a certificate's common name that would run a script if the
// console inserted it as markup (K.1).
const hostileCN = `<img src=x onerror=document.title='pwned'>`

// TestConsole_K drives the web console of `kubegate up` in headless
// Chromium: login (K.1), the PKI view against `kubegate cert expiry`
// (K.2), a refused kubectl request in the live view (K.3), a pod's scores
// against `kubegate scheduler explain` (K.4), what a namespace viewer may
// and may not see (K.5, K.1), and a hostile CN shown as text (K.1). The
// browser ignores certificate errors rather than trusting the cluster's
// freshly made CA, which would need a certificate database of its own.
func TestConsole_K(t *testing.T) {
	chromium := requireTool(t, "chromium")
	requireTool(t, "kubectl")
	requireTool(t, "curl")
	dir := filepath.Join(t.TempDir(), "cluster")
	c := startUp(t, dir, 0, "--nodes", "3")
	defer c.stop(t)

	shots := os.Getenv("KUBEGATE_ARTIFACTS")
	if shots == "" {
		shots = t.TempDir()
	}
	t.Logf("console screenshots in %s", shots)

	// Two namespaces: the viewer may read a and nothing of b.
	for _, args := range [][]string{
		{"create", "namespace", "a"},
		{"create", "namespace", "b"},
		{"create", "serviceaccount", "console-admin", "-n", "default"},
		{"create", "clusterrolebinding", "console-admin", "--clusterrole=cluster-admin", "--serviceaccount=default:console-admin"},
		{"create", "serviceaccount", "viewer", "-n", "a"},
		{"create", "rolebinding", "viewer", "--clusterrole=view", "--serviceaccount=a:viewer", "-n", "a"},
		{"create", "deployment", "web", "-n", "a", "--image=registry.k8s.io/pause:3.10", "--replicas=2"},
		{"create", "deployment", "hidden-b-app", "-n", "b", "--image=registry.k8s.io/pause:3.10", "--replicas=1"},
	} {
		if res := c.kubectl(t, nil, args...); res.code != 0 {
			t.Fatalf("kubectl %v: %+v", args, res)
		}
	}
	huge := strings.Replace(strings.Replace(appPodYAML, "name: app\n", "name: huge\n", 1),
		"    ports:\n", "    resources:\n      requests:\n        cpu: \"1000\"\n    ports:\n", 1)
	must(t, c.kubectl(t, []byte(huge), "create", "-n", "a", "-f", "-"), "pod/huge created")
	adminToken := createToken(t, c, "default", "console-admin")
	viewerToken := createToken(t, c, "a", "viewer")
	webPods := boundPods(t, c, "a", "app=web", 2)
	boundPods(t, c, "b", "app=hidden-b-app", 1)
	testwait.For(t, 30*time.Second, "huge Unschedulable", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "pod", "huge", "-n", "a", "-o", `jsonpath={.status.conditions[?(@.type=="PodScheduled")].reason}`)
		return res.stdout == "Unschedulable", res.stdout + res.stderr
	})

	browser := newChromium(t, chromium)
	admin := newTab(t, browser, c.server, shots)

	t.Run("token login shows the user in the top bar K1", func(t *testing.T) {
		admin.login(t, adminToken)
		admin.waitFor(t, "the admin's name in the top bar",
			`document.getElementById('whoami').textContent === 'system:serviceaccount:default:console-admin'`)
		// The token is in sessionStorage and nowhere in the URL.
		if got := evalJS[bool](t, admin, `sessionStorage.getItem('kubegate.token') === `+jsString(adminToken)+
			` && !location.href.includes(`+jsString(adminToken[:20])+`)`); !got {
			t.Fatal("the token is not in sessionStorage alone")
		}
	})

	t.Run("the PKI view lists what cert expiry lists K2", func(t *testing.T) {
		admin.open(t, "pki")
		admin.waitFor(t, "certificate rows", `document.querySelectorAll('#view-pki tr.cert').length > 0`)
		res := kubegate(t, "cert", "expiry", "--dir", dir, "-o", "json")
		if res.code != 0 {
			t.Fatalf("cert expiry: %+v", res)
		}
		var want []struct {
			Path           string    `json:"path"`
			KubeconfigUser string    `json:"kubeconfigUser"`
			Expires        time.Time `json:"expires"`
		}
		if err := json.Unmarshal([]byte(res.stdout), &want); err != nil {
			t.Fatalf("cert expiry -o json: %v\n%s", err, res.stdout)
		}
		rows := evalJS[[][3]string](t, admin, `[...document.querySelectorAll('#view-pki tr.cert')].map(r =>
			[r.dataset.file, r.dataset.kubeconfigUser || '', r.dataset.notAfter])`)
		got := map[string]time.Time{}
		for _, r := range rows {
			at, err := time.Parse(time.RFC3339, r[2])
			if err != nil {
				t.Fatalf("row %v: data-not-after: %v", r, err)
			}
			got[r[0]+"|"+r[1]] = at
		}
		if len(got) != len(want) || len(rows) != len(want) {
			t.Errorf("the PKI view shows %d certificates, cert expiry lists %d:\n%v\n%s", len(rows), len(want), rows, res.stdout)
		}
		for _, w := range want {
			at, ok := got[w.Path+"|"+w.KubeconfigUser]
			switch {
			case !ok:
				t.Errorf("cert expiry lists %s %s; the PKI view does not", w.Path, w.KubeconfigUser)
			case !at.Equal(w.Expires):
				t.Errorf("%s %s: the PKI view says it expires %v, cert expiry %v", w.Path, w.KubeconfigUser, at, w.Expires)
			}
		}
		admin.shot(t, "console-pki")
	})

	t.Run("a refused kubectl request shows in the live view within 2s K3", func(t *testing.T) {
		admin.open(t, "requests")
		admin.waitFor(t, "the live stream", `document.querySelector('#view-requests .stream-state').textContent.includes('live')`)
		kubeconfig := tokenKubeconfig(t, c, viewerToken)
		res := runCmd(t, nil, "kubectl", "--kubeconfig", kubeconfig, "get", "pods", "-n", "b")
		refused := time.Now()
		_, msg, ok := strings.Cut(strings.TrimSpace(res.stderr), "Error from server (Forbidden): ")
		if res.code == 0 || !ok {
			t.Fatalf("the viewer listing pods in b: got %+v, want Forbidden", res)
		}
		row := `[...document.querySelectorAll('#view-requests tr.request')].find(r =>
			r.dataset.decision === 'forbidden' && r.dataset.user === 'system:serviceaccount:a:viewer' &&
			r.querySelector('td.reason').textContent === ` + jsString(msg) + `)`
		admin.waitFor(t, "the forbidden row with kubectl's message", "Boolean("+row+")")
		if took := time.Since(refused); took > 2*time.Second {
			t.Errorf("the refused request took %v to show; K.3 says within 2 s", took)
		}
		// The panel shows the whole identity.
		evalJS[bool](t, admin, "("+row+").click(), true")
		admin.waitFor(t, "the identity panel", `(() => { const p = document.querySelector('#view-requests aside.detail');
			return p && !p.hidden && p.textContent.includes('serviceaccount') && p.textContent.includes('system:serviceaccounts:a'); })()`)
		admin.shot(t, "console-requests")
		// The decision filter hides every other decision.
		evalJS[bool](t, admin, `(() => { const s = document.getElementById('filter-decision'); s.value = 'forbidden';
			s.dispatchEvent(new Event('change')); return true; })()`)
		shown := evalJS[map[string]int](t, admin, `[...document.querySelectorAll('#view-requests tr.request')].reduce((m, r) =>
			(m[(r.hidden ? 'hidden ' : 'shown ') + r.dataset.decision] = (m[(r.hidden ? 'hidden ' : 'shown ') + r.dataset.decision] || 0) + 1, m), {})`)
		for k, n := range shown {
			if strings.HasPrefix(k, "shown ") && k != "shown forbidden" {
				t.Errorf("with the forbidden filter, %d rows %s", n, k)
			}
		}
		if shown["shown forbidden"] == 0 || shown["hidden allowed"] == 0 {
			t.Errorf("with the forbidden filter: %v; want forbidden rows shown and allowed ones hidden", shown)
		}
	})

	t.Run("the scheduling view shows the scores scheduler explain prints K4", func(t *testing.T) {
		pod := webPods[0]
		res := kubegate(t, "scheduler", "explain", pod, "-n", "a", "--kubeconfig", filepath.Join(dir, "admin.conf"))
		if res.code != 0 {
			t.Fatalf("scheduler explain: %+v", res)
		}
		want := parseExplainTable(t, res.stdout)
		admin.open(t, "scheduling/a/"+pod)
		admin.waitFor(t, "the score rows", fmt.Sprintf(`document.querySelectorAll('#view-scheduling tr.score-row').length === %d`, len(want.rows)))
		type cell struct{ Plugin, Raw, Normalized, Weighted string }
		type row struct {
			Node, Total string
			Cells       []cell
		}
		got := evalJS[[]row](t, admin, `[...document.querySelectorAll('#view-scheduling tr.score-row')].map(r => ({
			Node: r.dataset.node, Total: r.dataset.total,
			Cells: [...r.querySelectorAll('td[data-plugin]')].map(c => ({Plugin: c.dataset.plugin,
				Raw: c.dataset.raw || '', Normalized: c.dataset.normalized || '', Weighted: c.dataset.weighted || ''}))}))`)
		if pick := evalJS[string](t, admin, `document.querySelector('#view-scheduling .summary').dataset.pick`); pick != want.pick {
			t.Errorf("the view's pick is %q, scheduler explain's %q", pick, want.pick)
		}
		for i, w := range want.rows {
			if i >= len(got) {
				break
			}
			g := got[i]
			if g.Node != w.node || g.Total != w.total {
				t.Errorf("row %d: the view has node %s total %s; scheduler explain %s total %s", i, g.Node, g.Total, w.node, w.total)
			}
			if len(g.Cells) != len(want.plugins) {
				t.Fatalf("row %s: %d plugin cells, scheduler explain has %d plugins", g.Node, len(g.Cells), len(want.plugins))
			}
			for j, p := range want.plugins {
				gc, wc := g.Cells[j], w.cells[j]
				gotCell := gc.Raw + "/" + gc.Normalized + "/" + gc.Weighted
				if gc.Raw == "" {
					gotCell = "-"
				}
				if gc.Plugin != p || gotCell != wc {
					t.Errorf("node %s plugin %s: the view shows %s %s, scheduler explain %s", w.node, p, gc.Plugin, gotCell, wc)
				}
			}
		}
		// The pod no node can take is listed with its condition.
		admin.waitFor(t, "huge among the pending pods", `(() => { const r = document.querySelector('#view-scheduling tr.pending-pod[data-pod="a/huge"]');
			return r && r.textContent.includes('Unschedulable') && r.textContent.includes('Insufficient cpu'); })()`)
		admin.shot(t, "console-scheduling")
	})

	t.Run("the cluster view shows nodes, pods and rollouts, and a pod opens its scores K5", func(t *testing.T) {
		admin.open(t, "cluster")
		admin.waitFor(t, "all pods on their nodes", `document.querySelectorAll('#view-cluster .node-card[data-node^="node-"] li.pod').length >= 3 &&
			document.querySelectorAll('#view-cluster .node-card[data-node^="node-"]').length === 3`)
		admin.waitFor(t, "web's rollout", `(() => { const r = document.querySelector('#view-cluster tr.workload[data-name="a/web"]');
			return r && [...r.querySelectorAll('td.num')].map(td => td.textContent).join(',') === '2,2,2,2'; })()`)
		admin.shot(t, "console-cluster")
		evalJS[bool](t, admin, `document.querySelector('#view-cluster li.pod[data-pod="a/`+webPods[1]+`"]').click(), true`)
		admin.waitFor(t, "the clicked pod's scores", `location.hash === '#scheduling/a/`+webPods[1]+`' &&
			document.querySelectorAll('#view-scheduling tr.score-row').length > 0`)
	})

	t.Run("a namespace viewer sees its namespace only K5", func(t *testing.T) {
		viewer := newTab(t, browser, c.server, shots)
		viewer.login(t, viewerToken)
		viewer.waitFor(t, "the viewer's name", `document.getElementById('whoami').textContent === 'system:serviceaccount:a:viewer'`)
		viewer.open(t, "cluster")
		viewer.showNamespace(t, "b")
		viewer.waitFor(t, "not allowed in b", `[...document.querySelectorAll('#view-cluster .not-allowed')].some(p => p.textContent.includes('listing pods in namespace b'))`)
		viewer.showNamespace(t, "a")
		viewer.waitFor(t, "a's two web pods", `[...document.querySelectorAll('#view-cluster li.pod')].filter(li => li.dataset.pod.startsWith('a/web-')).length === 2`)
		// textContent: hidden views included.
		if text := evalJS[string](t, viewer, `document.body.textContent`); strings.Contains(text, "hidden-b-app") {
			t.Errorf("the viewer's page names b's pods:\n%s", text)
		}
	})

	t.Run("a namespace viewer sees neither the PKI nor other users' requests K1", func(t *testing.T) {
		viewer := newTab(t, browser, c.server, shots)
		viewer.login(t, viewerToken)
		viewer.open(t, "pki")
		viewer.waitFor(t, "the PKI refusal", `document.querySelector('#view-pki .not-allowed') !== null`)
		if n := evalJS[int](t, viewer, `document.querySelectorAll('#view-pki tr.cert').length`); n != 0 {
			t.Errorf("the viewer sees %d certificates", n)
		}
		viewer.open(t, "requests")
		viewer.waitFor(t, "the viewer's own requests", `document.querySelectorAll('#view-requests tr.request').length > 0`)
		others := evalJS[[]string](t, viewer, `[...document.querySelectorAll('#view-requests tr.request')].map(r => r.dataset.user).filter(u => u !== 'system:serviceaccount:a:viewer')`)
		if len(others) > 0 {
			t.Errorf("the viewer sees requests of %v", others)
		}
	})

	t.Run("a hostile CN shows as text K1", func(t *testing.T) {
		out := filepath.Join(dir, "pki", "users", "hostile")
		if res := kubegate(t, "cert", "issue", "--dir", dir, "--cn", hostileCN, "--out", out); res.code != 0 {
			t.Fatalf("cert issue: %+v", res)
		}
		res := runCmd(t, nil, "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", filepath.Join(dir, "pki", "ca.crt"),
			"--cert", out+".crt", "--key", out+".key", c.server+"/api/v1/namespaces/default/pods")
		if res.stdout != "403" {
			t.Fatalf("curl with the hostile certificate: got %+v, want 403", res)
		}
		admin.open(t, "pki") // from another view: the PKI is read again
		admin.waitFor(t, "the hostile certificate", `(() => { const r = document.querySelector('#view-pki tr.cert[data-file="pki/users/hostile.crt"]');
			return r && r.querySelector('td.cn').textContent === `+jsString(hostileCN)+`; })()`)
		admin.open(t, "requests")
		admin.waitFor(t, "the hostile user's request", `[...document.querySelectorAll('#view-requests tr.request')].some(r =>
			r.dataset.user === `+jsString(hostileCN)+` && r.querySelector('td.user').textContent === `+jsString(hostileCN)+`)`)
		if n := evalJS[int](t, admin, `document.querySelectorAll('main img').length`); n != 0 {
			t.Errorf("%d img elements in the views", n)
		}
		if title := evalJS[string](t, admin, `document.title`); title != consoleTitle {
			t.Errorf("document.title is %q, want %q", title, consoleTitle)
		}
	})
}

// createToken returns a token of service account ns/name.
func createToken(t *testing.T, c *upCluster, ns, name string) string {
	t.Helper()
	res := c.kubectl(t, nil, "create", "token", name, "-n", ns)
	if res.code != 0 {
		t.Fatalf("kubectl create token: %+v", res)
	}
	return strings.TrimSpace(res.stdout)
}

// boundPods waits until n pods matching selector in ns are on a node and
// carry the scheduler's explanation, and returns their names.
func boundPods(t *testing.T, c *upCluster, ns, selector string, n int) []string {
	t.Helper()
	var names []string
	testwait.For(t, 60*time.Second, fmt.Sprintf("%d explained pods %s in %s", n, selector, ns), func() (bool, string) {
		res := c.kubectl(t, nil, "get", "pods", "-n", ns, "-l", selector, "-o",
			`jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName} {.metadata.annotations.scheduler\.kubegate\.io/explain}{"\n"}{end}`)
		names = nil
		for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
			if f := strings.Fields(line); len(f) >= 3 {
				names = append(names, f[0])
			}
		}
		return len(names) == n, res.stdout + res.stderr
	})
	return names
}

// tokenKubeconfig writes a kubeconfig for c's server with token.
func tokenKubeconfig(t *testing.T, c *upCluster, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token.conf")
	conf := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: %q, certificate-authority: %q}
users:
- name: u
  user: {token: %q}
contexts:
- name: c
  context: {cluster: c, user: u}
current-context: c
`, c.server, filepath.Join(c.dir, "pki", "ca.crt"), token)
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// explainTable is `kubegate scheduler explain`'s score table.
type explainTable struct {
	pick    string
	plugins []string
	rows    []explainRow
}

type explainRow struct {
	node, total string
	cells       []string // "raw/normalized/weighted", or "-"
}

var explainColumns = regexp.MustCompile(`\s{2,}`)

func parseExplainTable(t *testing.T, out string) explainTable {
	t.Helper()
	var tab explainTable
	lines := strings.Split(out, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(line, "NODE ") {
			continue
		}
		hdr := explainColumns.Split(strings.TrimSpace(line), -1)
		for _, h := range hdr[1 : len(hdr)-1] {
			name, _, _ := strings.Cut(h, "(")
			tab.plugins = append(tab.plugins, name)
		}
		for _, l := range lines[i+1:] {
			f := explainColumns.Split(strings.TrimSpace(l), -1)
			if len(f) != len(hdr) {
				break
			}
			r := explainRow{node: f[0], total: f[len(f)-1], cells: f[1 : len(f)-1]}
			if n, ok := strings.CutSuffix(r.node, " *"); ok {
				r.node = n
				tab.pick = n
			}
			if _, err := strconv.Atoi(r.total); err != nil {
				t.Fatalf("scheduler explain row %q: total %q", l, r.total)
			}
			tab.rows = append(tab.rows, r)
		}
		break
	}
	if len(tab.rows) == 0 {
		t.Fatalf("no score table in scheduler explain's output:\n%s", out)
	}
	return tab
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// newChromium starts headless Chromium for the test, with a profile of
// its own and no sandbox (tests run as root in CI), and returns the
// browser's context, on which newTab opens tabs.
func newChromium(t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("ignore-certificate-errors", true),
		chromedp.WindowSize(1280, 800),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	// The first context made on the allocator is the browser's; tabs are
	// its children (a second one on the allocator would start a second
	// browser on the same profile).
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(cancel)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// consoleTab is one browser tab on the console; each tab has its own
// sessionStorage, so its own login.
type consoleTab struct {
	ctx   context.Context
	base  string
	shots string
}

func newTab(t *testing.T, browser context.Context, server, shots string) *consoleTab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	t.Cleanup(cancel)
	// The first action opens the tab, bound to the context it is given:
	// ctx itself, not a deadline derived from it.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	tab := &consoleTab{ctx: ctx, base: server + "/kubegate/ui/", shots: shots}
	// A script error or anything the Content-Security-Policy blocked
	// fails the test when the tab closes.
	var mu sync.Mutex
	var problems []string
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleException || strings.Contains(m.Text, "Content Security Policy") {
				mu.Lock()
				problems = append(problems, string(m.Type)+": "+m.Text)
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range problems {
			t.Errorf("the console page logged %s", p)
		}
	})
	tab.do(t, "open the console", chromedp.EmulateViewport(1280, 800), chromedp.Navigate(tab.base))
	return tab
}

// do runs steps, failing t with the page's text when one fails.
func (b *consoleTab) do(t *testing.T, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v\npage:\n%s", what, err, b.text())
	}
}

func (b *consoleTab) text() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	return s
}

// evalJS evaluates expr in the tab.
func evalJS[T any](t *testing.T, b *consoleTab, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v\npage:\n%s", expr, err, b.text())
	}
	return v
}

// waitFor polls expr in the page until it is true.
func (b *consoleTab) waitFor(t *testing.T, what, expr string) {
	t.Helper()
	testwait.For(t, 30*time.Second, what, func() (bool, string) {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("Boolean("+expr+")"))
		if err != nil {
			return false, err.Error()
		}
		return ok, "not; page:\n" + b.text()
	})
}

// login types token into the login form.
func (b *consoleTab) login(t *testing.T, token string) {
	t.Helper()
	b.do(t, "log in",
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("login-submit")),
		chromedp.WaitVisible(chromedp.ID("tabs")))
}

// open shows a view through its tab's address.
func (b *consoleTab) open(t *testing.T, view string) {
	t.Helper()
	evalJS[bool](t, b, `(location.hash = `+jsString(view)+`), true`)
	name, _, _ := strings.Cut(view, "/")
	b.waitFor(t, "the "+name+" view", `!document.getElementById('view-`+name+`').hidden`)
}

// showNamespace types ns into the cluster view's namespace field.
func (b *consoleTab) showNamespace(t *testing.T, ns string) {
	t.Helper()
	b.do(t, "show namespace "+ns,
		chromedp.SetValue(chromedp.ID("cluster-namespace"), ns),
		chromedp.Click(chromedp.ID("cluster-namespace-apply")))
}

// shot saves the viewport as name.png among the test's artifacts.
func (b *consoleTab) shot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", path)
}

// TestConsoleStreamsRecover_K3_K5 serves the console's files with a fake
// API whose first pod watch answers 410 Gone and whose first request
// stream ends early: the cluster view lists again and follows the new
// watch (K.5), a refused list shows "Not allowed" (K.5), and the request
// stream reconnects without showing a row twice (K.3).
func TestConsoleStreamsRecover_K3_K5(t *testing.T) {
	chromium := requireTool(t, "chromium")
	var mu sync.Mutex
	lists, feeds := 0, 0
	stop := make(chan struct{})
	// hold keeps a stream open until the client leaves or the test ends.
	hold := func(r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}
	pod := func(name, node string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"default","resourceVersion":"1"},"spec":{"nodeName":%q},"status":{"phase":"Running"}}`, name, node)
	}
	line := func(id string) string {
		return fmt.Sprintf(`{"time":"2026-01-02T03:04:05Z","requestID":%q,"user":"u","groups":["g"],"verb":"get","method":"GET","path":"/api","decision":"allowed","status":200}`+"\n", id)
	}
	static, err := fs.Sub(ui.Static, "static")
	if err != nil {
		t.Fatal(err)
	}
	files := http.StripPrefix("/kubegate/ui/", http.FileServerFS(static))
	mux := http.NewServeMux()
	mux.Handle("/kubegate/ui/", files)
	mux.HandleFunc("/kubegate/ui/api/session", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"user":{"username":"u","groups":["g"]},"authenticator":"x509","views":{"pki":false,"requests":"all"}}`)
	})
	mux.HandleFunc("/kubegate/ui/api/requests", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		feeds++
		n := feeds
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, line("r1"))
		if n == 1 {
			return // the stream ends: the page reconnects
		}
		io.WriteString(w, line("r2"))
		w.(http.Flusher).Flush()
		hold(r)
	})
	mux.HandleFunc("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":{"allowed":true}}`)
	})
	mux.HandleFunc("/api/v1/pods", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("watch") == "" {
			mu.Lock()
			lists++
			n := lists
			mu.Unlock()
			if n == 1 {
				fmt.Fprintf(w, `{"metadata":{"resourceVersion":"10"},"items":[%s]}`, pod("p1", "n1"))
				return
			}
			fmt.Fprintf(w, `{"metadata":{"resourceVersion":"20"},"items":[%s,%s]}`, pod("p1", "n1"), pod("p2", "n2"))
			return
		}
		if q.Get("resourceVersion") == "10" {
			fmt.Fprint(w, `{"type":"ERROR","object":{"kind":"Status","status":"Failure","reason":"Expired","code":410,"message":"too old resource version: 10 (15)"}}`+"\n")
			return
		}
		fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", pod("p3", "n1"))
		w.(http.Flusher).Flush()
		hold(r)
	})
	mux.HandleFunc("/api/v1/nodes", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") != "" {
			hold(r)
			return
		}
		fmt.Fprint(w, `{"metadata":{"resourceVersion":"5"},"items":[]}`)
	})
	forbidden := func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprint(w, `{"kind":"Status","status":"Failure","reason":"Forbidden","code":403,"message":"deployments.apps is forbidden: User \"u\" cannot list resource \"deployments\""}`)
	}
	mux.HandleFunc("/apis/apps/v1/", forbidden)
	srv := httptest.NewServer(mux)
	// Cleanups run last first: the browser closes, then the streams
	// still open end, then the server.
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) })

	browser := newChromium(t, chromium)
	tab := newTab(t, browser, srv.URL, t.TempDir())
	tab.waitFor(t, "the top bar", `document.getElementById('whoami').textContent === 'u'`)

	// Without the PKI view, the cluster view is the first shown; it is
	// not opened again, so a second list can only follow the 410.
	tab.waitFor(t, "the cluster view", `!document.getElementById('view-cluster').hidden`)
	tab.waitFor(t, "p1, p2 and p3 after the relist", `['default/p1', 'default/p2', 'default/p3'].every(p =>
		document.querySelectorAll('#view-cluster li.pod[data-pod="' + p + '"]').length === 1)`)
	mu.Lock()
	if lists != 2 {
		t.Errorf("the pods were listed %d times, want 2 (once more after the 410)", lists)
	}
	mu.Unlock()
	tab.waitFor(t, "deployments not allowed", `[...document.querySelectorAll('#view-cluster .not-allowed')].some(p =>
		p.textContent.includes('listing deployments') && p.textContent.includes('deployments.apps is forbidden'))`)

	tab.open(t, "requests")
	tab.waitFor(t, "r1 and r2 once each", `['r1', 'r2'].every(id =>
		document.querySelectorAll('#view-requests tr.request[data-request-id="' + id + '"]').length === 1)`)
	mu.Lock()
	if feeds < 2 {
		t.Errorf("the request stream was opened %d times, want a reconnection", feeds)
	}
	mu.Unlock()
}
