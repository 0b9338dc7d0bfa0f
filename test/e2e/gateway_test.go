package e2e

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/fsutil"
	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testtool"
	"github.com/kubegate/kubegate/internal/testwait"
	"github.com/kubegate/kubegate/kubeconfig"
)

// fakeAPI is an upstream API server just real enough for kubectl get and
// watch on pods. It requires the front-proxy client certificate and
// records the identity headers of every request.
type fakeAPI struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
	events  chan string // watch events to stream, as JSON lines
}

func (f *fakeAPI) lastHeader(t *testing.T) http.Header {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.headers) == 0 {
		t.Fatal("upstream saw no request")
	}
	return f.headers[len(f.headers)-1]
}

const podJSON = `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"app","namespace":"default","uid":"u1","resourceVersion":"%d","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"containers":[{"name":"app","image":"app"}]},"status":{"phase":"%s"}}`

func newFakeAPI(t *testing.T, frontProxyCA, serverCA *testpki.Cert) *fakeAPI {
	f := &fakeAPI{events: make(chan string, 16)}
	mux := http.NewServeMux()
	mux.HandleFunc("/api", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1:6443"}]}`)
	})
	mux.HandleFunc("/apis", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
	})
	mux.HandleFunc("/api/v1", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"kind":"APIResourceList","groupVersion":"v1","resources":[{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get","list","watch"],"shortNames":["po"]}]}`)
	})
	mux.HandleFunc("/api/v1/namespaces/default/pods", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") == "" {
			fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[`+podJSON+`]}`, 1, "Pending")
			return
		}
		fl := w.(http.Flusher)
		fl.Flush()
		for {
			select {
			case ev := <-f.events:
				fmt.Fprintln(w, ev)
				fl.Flush()
			case <-r.Context().Done():
				return
			}
		}
	})
	f.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.headers = append(f.headers, r.Header.Clone())
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	serving := serverCA.Issue(t, testpki.Options{CN: "upstream", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	pair, err := tls.X509KeyPair(serving.CertPEM, serving.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	f.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: frontProxyCA.Pool(), ClientAuth: tls.RequireAndVerifyClientCert}
	f.StartTLS()
	t.Cleanup(f.Close)
	return f
}

func freePort(t *testing.T) int { return testtool.FreePort(t) }

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := fsutil.WriteFile(path, data, fsutil.ModeKey, true); err != nil { // replaced by rename
		t.Fatal(err)
	}
}

// gatewayEnv is a running `kubegate gateway` in front of a fakeAPI, with
// the files it was started with.
type gatewayEnv struct {
	base                             string
	api                              *fakeAPI
	clientCA, frontProxyCA, serverCA *testpki.Cert
	serverCAFile, tokens, caFile     string
	alice                            *testpki.Cert
	aliceCert, aliceKey              string
	stderr                           *testwait.Buffer
}

func startGateway(t *testing.T, curl string, extra ...string) *gatewayEnv {
	t.Helper()
	dir := t.TempDir()
	e := &gatewayEnv{
		clientCA:     testpki.NewCA(t, "kubernetes"),
		frontProxyCA: testpki.NewCA(t, "front-proxy-ca"),
		serverCA:     testpki.NewCA(t, "server-ca"),
		stderr:       &testwait.Buffer{},
	}
	e.api = newFakeAPI(t, e.frontProxyCA, e.serverCA)

	e.caFile = filepath.Join(dir, "ca.crt")
	writeFile(t, e.caFile, e.clientCA.CertPEM)
	e.serverCAFile = filepath.Join(dir, "server-ca.crt")
	writeFile(t, e.serverCAFile, e.serverCA.CertPEM)
	servingCert, servingKey := e.serverCA.Issue(t, testpki.Options{CN: "kube-apiserver", DNSNames: []string{"localhost"},
		IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}).WriteFiles(t, dir, "serving")
	proxyCert, proxyKey := e.frontProxyCA.Issue(t, testpki.Options{CN: "front-proxy-client"}).WriteFiles(t, dir, "front-proxy-client")
	e.alice = e.clientCA.Issue(t, testpki.Options{CN: "alice", Orgs: []string{"devs"}})
	e.aliceCert, e.aliceKey = e.alice.WriteFiles(t, dir, "alice")
	e.tokens = filepath.Join(dir, "tokens.csv")
	writeFile(t, e.tokens, []byte("s3cret-token,bob,uid-bob,\"ops,dev\"\n"))
	saKey := testpki.NewCA(t, "sa").Key
	pubDER, _ := x509.MarshalPKIXPublicKey(saKey.Public())
	saPub := filepath.Join(dir, "sa.pub")
	writeFile(t, saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))

	port := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	args := append([]string{"gateway",
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--tls-cert-file", servingCert, "--tls-private-key-file", servingKey,
		"--client-ca-file", e.caFile, "--token-auth-file", e.tokens,
		"--service-account-key-file", saPub, "--service-account-lookup=false",
		"--upstream", e.api.URL, "--upstream-ca-file", e.serverCAFile,
		"--proxy-client-cert-file", proxyCert, "--proxy-client-key-file", proxyKey}, extra...)
	gw := exec.CommandContext(ctx, kubegateBin, args...)
	gw.Stderr = e.stderr
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = gw.Wait() })
	e.base = fmt.Sprintf("https://127.0.0.1:%d", port)
	waitHealthy(t, curl, e.base, e.serverCAFile, e.stderr)
	return e
}

func TestGatewayWithCurlAndKubectl(t *testing.T) {
	curl := requireTool(t, "curl")
	kubectl := requireTool(t, "kubectl")
	e := startGateway(t, curl)
	api, base, serverCAFile, serverCA, alice := e.api, e.base, e.serverCAFile, e.serverCA, e.alice
	aliceCert, aliceKey, tokens, dir := e.aliceCert, e.aliceKey, e.tokens, t.TempDir()
	ctx := context.Background()

	t.Run("curl with a client cert", func(t *testing.T) {
		res := runCmd(t, nil, curl, "-sS", "--fail-with-body", "--cacert", serverCAFile, "--cert", aliceCert, "--key", aliceKey,
			"-H", "X-Remote-User: admin", "-H", "X-Remote-Group: system:masters", base+"/api/v1/namespaces/default/pods")
		if res.code != 0 || !strings.Contains(res.stdout, `"PodList"`) {
			t.Fatalf("curl: %+v", res)
		}
		h := api.lastHeader(t)
		if got := h.Values("X-Remote-User"); strings.Join(got, ",") != "alice" {
			t.Errorf("upstream X-Remote-User = %q, want [alice]", got)
		}
		if got := h.Values("X-Remote-Group"); strings.Join(got, ",") != "devs,system:authenticated" {
			t.Errorf("upstream X-Remote-Group = %q", got)
		}
	})
	t.Run("curl over HTTP/2", func(t *testing.T) {
		res := runCmd(t, nil, curl, "-sS", "--http2", "--fail-with-body", "-w", "\nHTTP/%{http_version}", "--cacert", serverCAFile,
			"--cert", aliceCert, "--key", aliceKey, "-H", "X-Remote-User: admin", base+"/api/v1/namespaces/default/pods")
		if res.code != 0 || !strings.Contains(res.stdout, `"PodList"`) || !strings.HasSuffix(res.stdout, "\nHTTP/2") {
			t.Fatalf("curl: %+v", res)
		}
		if got := api.lastHeader(t).Values("X-Remote-User"); strings.Join(got, ",") != "alice" {
			t.Errorf("upstream X-Remote-User = %q, want [alice]", got)
		}
	})
	t.Run("curl with a static token", func(t *testing.T) {
		res := runCmd(t, nil, curl, "-sS", "--fail-with-body", "--cacert", serverCAFile, "-H", "Authorization: Bearer s3cret-token",
			base+"/api/v1/namespaces/default/pods")
		if res.code != 0 {
			t.Fatalf("curl: %+v", res)
		}
		h := api.lastHeader(t)
		if h.Get("X-Remote-User") != "bob" || h.Get("X-Remote-Uid") != "uid-bob" || h.Get("Authorization") != "" {
			t.Errorf("upstream saw user %q uid %q authorization %q", h.Get("X-Remote-User"), h.Get("X-Remote-Uid"), h.Get("Authorization"))
		}
	})
	t.Run("curl without credentials gets a 401 Status", func(t *testing.T) {
		res := runCmd(t, nil, curl, "-sS", "-o", "-", "-w", "\n%{http_code}", "--cacert", serverCAFile,
			"-H", "X-Remote-User: admin", base+"/api/v1/namespaces/default/pods")
		if !strings.HasSuffix(res.stdout, "\n401") || !strings.Contains(res.stdout, `"reason":"Unauthorized"`) {
			t.Fatalf("curl: %+v", res)
		}
	})

	kc := filepath.Join(dir, "alice.conf")
	cfg, err := kubeconfig.Build(kubeconfig.Options{Server: base, CAPEM: serverCA.CertPEM, UserName: "alice", CertPEM: alice.CertPEM, KeyPEM: alice.KeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	if err := kubeconfig.Write(kc, cfg, true); err != nil {
		t.Fatal(err)
	}
	t.Run("kubectl get pods", func(t *testing.T) {
		res := runCmd(t, nil, kubectl, "--kubeconfig", kc, "get", "pods", "-n", "default")
		if res.code != 0 || !strings.Contains(res.stdout, "app") {
			t.Fatalf("kubectl get pods: %+v", res)
		}
	})
	t.Run("kubectl get pods -w streams events as they happen", func(t *testing.T) {
		wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
		defer wcancel()
		cmd := exec.CommandContext(wctx, kubectl, "--kubeconfig", kc, "get", "pods", "-n", "default", "-w", "--no-headers",
			"-o", "custom-columns=NAME:.metadata.name,PHASE:.status.phase,RV:.metadata.resourceVersion")
		cmd.Env = kubectlEnv(t)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { wcancel(); _ = cmd.Wait() }()
		lines := bufio.NewScanner(out)
		next := func() string {
			if !lines.Scan() {
				t.Fatalf("kubectl watch ended early: %v", lines.Err())
			}
			return lines.Text()
		}
		if f := strings.Fields(next()); len(f) != 3 || f[0] != "app" || f[1] != "Pending" || f[2] != "1" {
			t.Fatalf("first line %q, want the listed pod at resourceVersion 1", f)
		}
		// Each event is sent only after the previous one was printed, so a
		// buffering proxy would stall here.
		for rv, phase := range map[int]string{2: "Running", 3: "Succeeded"} {
			ev := map[string]any{"type": "MODIFIED", "object": json.RawMessage(fmt.Sprintf(podJSON, rv, phase))}
			b, _ := json.Marshal(ev)
			api.events <- string(b)
			if f := strings.Fields(next()); len(f) != 3 || f[1] != phase || f[2] != strconv.Itoa(rv) {
				t.Fatalf("watch line %q, want app %s %d", f, phase, rv)
			}
		}
	})
	t.Run("a token removed from the file stops working within 2s", func(t *testing.T) {
		writeFile(t, tokens, []byte("other-token,carol,uid-carol\n"))
		testwait.For(t, 2*time.Second, "removed token refused", func() (bool, string) {
			res := runCmd(t, nil, curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", serverCAFile,
				"-H", "Authorization: Bearer s3cret-token", base+"/api/v1/namespaces/default/pods")
			return res.stdout == "401", "status " + res.stdout
		})
		res := runCmd(t, nil, curl, "-sS", "--fail", "--cacert", serverCAFile, "-H", "Authorization: Bearer other-token", base+"/api/v1/namespaces/default/pods")
		if res.code != 0 {
			t.Fatalf("new token refused: %+v", res)
		}
	})
	if strings.Contains(e.stderr.String(), "s3cret-token") {
		t.Error("the gateway logged a token")
	}
}

// waitHealthy polls base/kubegate/healthz until the gateway answers.
func waitHealthy(t *testing.T, curl, base, caFile string, stderr fmt.Stringer) {
	t.Helper()
	testwait.For(t, 15*time.Second, "gateway healthy", func() (bool, string) {
		res := runCmd(t, nil, curl, "-sS", "--cacert", caFile, base+"/kubegate/healthz")
		return res.stdout == "ok", fmt.Sprintf("%s; stderr:\n%s", res.stderr, stderr)
	})
}
