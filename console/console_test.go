package console

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/kubeconfig"
)

// adminOnly allows the console's views to the user admin, as RBAC
// allows cluster-admin every non-resource URL and view none.
var adminOnly = authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
	if a.User.Name == "admin" && !a.ResourceRequest && a.Verb == "get" && (a.Path == PKIViewPath || a.Path == RequestsViewPath) {
		return authz.Allow, "", nil
	}
	return authz.NoOpinion, "", nil
})

func newConsole(t *testing.T, c Config) *Console {
	t.Helper()
	if c.Authorizer == nil {
		c.Authorizer = adminOnly
	}
	con, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	return con
}

func get(t *testing.T, c *Console, path, user string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", path, nil)
	if strings.HasPrefix(r.URL.Path, APIPrefix) {
		c.ServeAPI(w, r, Identity{User: authn.User{Name: user, Groups: []string{"system:authenticated"}}, Authenticator: "x509"})
	} else {
		c.ServeStatic(w, r)
	}
	return w
}

func TestSessionViews_K1(t *testing.T) {
	c := newConsole(t, Config{})
	for _, tc := range []struct {
		user string
		want Views
	}{
		{"admin", Views{PKI: true, Requests: AllRequests}},
		{"viewer", Views{PKI: false, Requests: OwnRequests}},
	} {
		w := get(t, c, APIPrefix+"session", tc.user)
		var s session
		if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil || w.Code != 200 {
			t.Fatalf("%s: %d %s", tc.user, w.Code, w.Body)
		}
		if s.Views != tc.want || s.User.Username != tc.user || s.Authenticator != "x509" {
			t.Errorf("%s: got %+v, want views %+v", tc.user, s, tc.want)
		}
	}
	// Without an authorizer nobody gets a view.
	c, _ = New(Config{})
	var s session
	_ = json.Unmarshal(get(t, c, APIPrefix+"session", "admin").Body.Bytes(), &s)
	if s.Views != (Views{Requests: OwnRequests}) {
		t.Errorf("no authorizer: views %+v, want none", s.Views)
	}
}

func TestStatic_K1(t *testing.T) {
	files := fstest.MapFS{
		"index.html":  {Data: []byte("<!doctype html>index")},
		"app.js":      {Data: []byte("export {}")},
		"sub/x.css":   {Data: []byte("a{}")},
		"../secret":   {Data: []byte("secret")},
		"sub/../../s": {Data: []byte("secret")},
	}
	c := newConsole(t, Config{Static: files})
	for _, tc := range []struct {
		path, ctype string
		code        int
		body        string
	}{
		{"/kubegate/ui/", "text/html; charset=utf-8", 200, "<!doctype html>index"},
		{"/kubegate/ui/app.js", "text/javascript; charset=utf-8", 200, "export {}"},
		{"/kubegate/ui/sub/x.css", "text/css; charset=utf-8", 200, "a{}"},
		{"/kubegate/ui/sub", "", 404, ""},
		{"/kubegate/ui/sub/", "", 404, ""},
		{"/kubegate/ui/../secret", "", 404, ""},
		{"/kubegate/ui/%2e%2e/secret", "", 404, ""},
		{"/kubegate/ui/sub/%2e%2e/%2e%2e/s", "", 404, ""},
		{"/kubegate/ui/..%2fsecret", "", 404, ""},
		{"/kubegate/ui", "", 301, ""},
	} {
		w := get(t, c, tc.path, "")
		if w.Code != tc.code || (tc.ctype != "" && w.Header().Get("Content-Type") != tc.ctype) || (tc.body != "" && w.Body.String() != tc.body) {
			t.Errorf("GET %s: %d %q %q, want %d %q %q", tc.path, w.Code, w.Header().Get("Content-Type"), w.Body, tc.code, tc.ctype, tc.body)
		}
		if strings.Contains(w.Body.String(), "secret") {
			t.Errorf("GET %s escaped the files: %q", tc.path, w.Body)
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors 'none'") || w.Header().Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: CSP %q, X-Frame-Options %q", tc.path, csp, w.Header().Get("X-Frame-Options"))
		}
	}
	// The files built in.
	c = newConsole(t, Config{})
	if w := get(t, c, "/kubegate/ui/", ""); w.Code != 200 || !strings.Contains(w.Body.String(), "<html") {
		t.Errorf("built-in index.html: %d %.100s", w.Code, w.Body)
	}
}

func TestUnknownEndpoint_K1(t *testing.T) {
	c := newConsole(t, Config{})
	w := get(t, c, APIPrefix+"x", "admin")
	var s struct {
		Kind string
		Code int
	}
	if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil || w.Code != 404 || s.Kind != "Status" || s.Code != 404 {
		t.Errorf("GET %sx: %d %s, want a 404 Status", APIPrefix, w.Code, w.Body)
	}
	if w.Header().Get("Cache-Control") != "no-store" || w.Header().Get("Content-Security-Policy") == "" {
		t.Errorf("headers %v, want no-store and the CSP", w.Header())
	}
}

// writeTree writes a cluster tree as kubegate pki init does, and a
// kubeconfig with a token.
func writeTree(t *testing.T) (dir, token string) {
	t.Helper()
	dir = t.TempDir()
	spec := ca.Spec{}
	spec.Default()
	plan, err := ca.NewPlan(dir, spec, false)
	if err != nil {
		t.Fatal(err)
	}
	out, err := plan.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.WriteFiles(dir, out.Files); err != nil {
		t.Fatal(err)
	}
	if err := kubeconfig.WriteCredentials(dir, "kubernetes", "https://127.0.0.1:6443", out.Credentials); err != nil {
		t.Fatal(err)
	}
	token = "tok3n-that-must-never-show-0123456789"
	cfg, err := kubeconfig.Build(kubeconfig.Options{ClusterName: "kubernetes", Server: "https://127.0.0.1:6443", UserName: "robot", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	if err := kubeconfig.Write(filepath.Join(dir, "robot.conf"), cfg, false); err != nil {
		t.Fatal(err)
	}
	return dir, token
}

func TestPKI_K2(t *testing.T) {
	dir, token := writeTree(t)
	c := newConsole(t, Config{PKIDir: dir})
	w := get(t, c, APIPrefix+"pki", "admin")
	if w.Code != 200 {
		t.Fatalf("admin: %d %s", w.Code, w.Body)
	}
	body := w.Body.String()
	if strings.Contains(body, "PRIVATE KEY") || strings.Contains(body, token) {
		t.Fatalf("the PKI view holds a key or the token:\n%s", body)
	}
	// No key's bytes: not a line of any key file, nor of the
	// kubeconfigs' embedded keys.
	keys, _ := filepath.Glob(filepath.Join(dir, "pki", "*.key"))
	etcdKeys, _ := filepath.Glob(filepath.Join(dir, "pki", "etcd", "*.key"))
	for _, k := range append(keys, etcdKeys...) {
		data, _ := os.ReadFile(k)
		for _, l := range strings.Split(string(data), "\n") {
			if len(l) > 16 && !strings.HasPrefix(l, "-----") && strings.Contains(body, l) {
				t.Errorf("the PKI view holds a line of %s", k)
			}
		}
	}
	var p PKI
	if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}

	// The same certificates, with the same dates, as cert expiry.
	emb, _ := kubeconfig.ScanDir(dir)
	found, err := ca.Scan(dir, emb)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{}
	for _, e := range ca.Expiry(found, time.Now()) {
		want[e.Path+":"+e.KubeconfigUser] = e.NotAfter
	}
	got := map[string]time.Time{}
	for _, cert := range p.Certificates {
		got[cert.File+":"+cert.KubeconfigUser] = cert.NotAfter
	}
	if len(got) != len(want) || len(p.Certificates) != len(want) {
		t.Errorf("%d certificates, want the %d cert expiry lists", len(p.Certificates), len(want))
	}
	for k, na := range want {
		if !got[k].Equal(na) {
			t.Errorf("%s: notAfter %v, want %v as cert expiry", k, got[k], na)
		}
	}

	byFile := map[string]Certificate{}
	for _, cert := range p.Certificates {
		byFile[cert.File] = cert
	}
	if a := byFile["admin.conf"]; a.User != "kubernetes-admin" || strings.Join(a.Groups, ",") != "kubeadm:cluster-admins" || a.Authority != "cluster" || a.KeyType == "" {
		t.Errorf("admin.conf's certificate %+v, want kubernetes-admin in kubeadm:cluster-admins under the cluster CA", a)
	}
	if a := byFile["pki/apiserver.crt"]; len(a.DNSNames) == 0 || len(a.IPAddresses) == 0 || a.Authority != "cluster" || !strings.Contains(strings.Join(a.Usages, ","), "server auth") {
		t.Errorf("apiserver.crt %+v, want its SANs, server auth, under cluster", a)
	}
	if a := byFile["pki/front-proxy-client.crt"]; a.Authority != "front-proxy" {
		t.Errorf("front-proxy-client.crt's authority %q, want front-proxy", a.Authority)
	}
	if a := byFile["pki/etcd/server.crt"]; a.Authority != "etcd" {
		t.Errorf("etcd/server.crt's authority %q, want etcd", a.Authority)
	}
	if a := byFile["pki/ca.crt"]; !a.IsCA || a.Authority != "cluster" || a.Serial == "" {
		t.Errorf("ca.crt %+v", a)
	}
	var names []string
	for _, a := range p.Authorities {
		names = append(names, a.Name)
	}
	if strings.Join(names, ",") != "cluster,etcd,front-proxy" {
		t.Errorf("authorities %v, want cluster, etcd, front-proxy", names)
	}
	if len(p.ServiceAccountKeys) != 1 || p.ServiceAccountKeys[0].File != "pki/sa.pub" || p.ServiceAccountKeys[0].KeyType == "unreadable" {
		t.Errorf("service-account keys %+v, want pki/sa.pub", p.ServiceAccountKeys)
	}
	kc := map[string]Kubeconfig{}
	for _, k := range p.Kubeconfigs {
		kc[k.File] = k
	}
	if a := kc["admin.conf"]; a.Credential != "client-certificate" || a.User != "kubernetes-admin" || a.NotAfter == nil || a.Server != "https://127.0.0.1:6443" {
		t.Errorf("admin.conf %+v", a)
	}
	if r := kc["robot.conf"]; r.Credential != "token" || r.User != "robot" || r.NotAfter != nil {
		t.Errorf("robot.conf %+v, want a token credential of robot", r)
	}

	// Only those who may get /kubegate/ui/pki.
	if w := get(t, c, APIPrefix+"pki", "viewer"); w.Code != 403 || !strings.Contains(w.Body.String(), `cannot get path \"/kubegate/ui/pki\"`) {
		t.Errorf("viewer: %d %s, want 403 naming the path", w.Code, w.Body)
	}
	// A kubeconfig that cannot be read is named, never quoted.
	secret := "s3cret-in-a-broken-kubeconfig"
	if err := os.WriteFile(filepath.Join(dir, "broken.conf"), []byte("users:\n- name: x\n  user: {token: "+secret+"\n  ]["), 0o600); err != nil {
		t.Fatal(err)
	}
	if w := get(t, c, APIPrefix+"pki", "admin"); w.Code != 500 || strings.Contains(w.Body.String(), secret) || !strings.Contains(w.Body.String(), "broken.conf") {
		t.Errorf("broken kubeconfig: %d %s, want 500 naming broken.conf without its content", w.Code, w.Body)
	}
	// No directory: not configured.
	c = newConsole(t, Config{})
	if w := get(t, c, APIPrefix+"pki", "admin"); w.Code != 200 || !strings.Contains(w.Body.String(), `"configured":false`) {
		t.Errorf("no directory: %d %s", w.Code, w.Body)
	}
}

func TestFeedRing_K3(t *testing.T) {
	f := NewFeed(3)
	for i := range 5 {
		f.Publish(&Record{RequestID: string(rune('a' + i))})
	}
	recent, s, _, _ := f.subscribe("admin", "")
	var ids []string
	for _, r := range recent {
		ids = append(ids, r.RequestID)
	}
	if strings.Join(ids, "") != "cde" {
		t.Errorf("kept %v, want the last 3 oldest first", ids)
	}
	// A subscriber that never reads does not hold Publish up.
	done := make(chan struct{})
	go func() {
		for range 10 * subscriberBuffer {
			f.Publish(&Record{RequestID: "x"})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Publish blocked on a subscriber that does not read")
	}
	if len(s.ch) != subscriberBuffer {
		t.Errorf("the subscriber holds %d records, want its buffer's %d, the rest dropped", len(s.ch), subscriberBuffer)
	}
	f.unsubscribe(s)
	f.Close()
	if _, _, ok, _ := f.subscribe("admin", ""); ok {
		t.Error("a closed feed took a subscriber")
	}
}

func TestFeedBoundsItsStreams_K3(t *testing.T) {
	f := NewFeed(0)
	var open []*subscription
	for range MaxStreamsPerUser {
		_, s, _, err := f.subscribe("mallory", "mallory")
		if err != nil {
			t.Fatalf("stream %d of mallory refused: %v", len(open)+1, err)
		}
		open = append(open, s)
	}
	if _, _, _, err := f.subscribe("mallory", "mallory"); err != errTooManyStreams {
		t.Fatalf("stream %d of one user: err %v, want errTooManyStreams", MaxStreamsPerUser+1, err)
	}
	// Another user's streams are not counted against mallory's, but all
	// of them against the feed's.
	for i := MaxStreamsPerUser; i < MaxStreams; i++ {
		name := fmt.Sprintf("u%d", i)
		if _, s, _, err := f.subscribe(name, name); err != nil {
			t.Fatalf("stream %d in all refused: %v", i+1, err)
		} else {
			open = append(open, s)
		}
	}
	if _, _, _, err := f.subscribe("new", "new"); err != errTooManyStreams {
		t.Fatalf("stream %d in all: err %v, want errTooManyStreams", MaxStreams+1, err)
	}
	// A stream that ends frees its place.
	f.unsubscribe(open[0])
	if _, _, _, err := f.subscribe("mallory", "mallory"); err != nil {
		t.Fatalf("after one stream ended: %v", err)
	}
	// A user's own stream is given only that user's records.
	f.Publish(&Record{RequestID: "a", User: &authn.User{Name: "admin"}})
	f.Publish(&Record{RequestID: "m", User: &authn.User{Name: "mallory"}})
	f.Publish(&Record{RequestID: "x"})
	if got := len(open[1].ch); got != 1 {
		t.Errorf("mallory's own stream was given %d records, want her 1", got)
	}
	if r := <-open[1].ch; r.RequestID != "m" {
		t.Errorf("mallory's own stream got %q", r.RequestID)
	}
}

func TestRequestsStream_K3(t *testing.T) {
	f := NewFeed(0)
	c := newConsole(t, Config{Feed: f})
	alice := &authn.User{Name: "alice"}
	admin := &authn.User{Name: "admin"}
	f.Publish(&Record{RequestID: "1", User: admin, Method: "GET", Path: "/api/v1/namespaces/a/pods", Status: 200})
	f.Publish(&Record{RequestID: "2", User: alice, Method: "GET", Path: "/api/v1/namespaces/a/pods", RawQuery: "watch=1", Status: 200})
	f.Publish(&Record{RequestID: "3", Method: "GET", Path: "/api/v1/pods", Status: 401, Reason: "invalid bearer token"})
	f.Publish(&Record{RequestID: "4", User: alice, Method: "GET", Path: RequestsPath, Status: 200})

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.ServeAPI(w, r, Identity{User: authn.User{Name: r.Header.Get("X-Test-User")}})
	}))
	defer srv.Close()
	read := func(user, query string, n int) []Line {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+RequestsPath+query, nil)
		req.Header.Set("X-Test-User", user)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out []Line
		sc := bufio.NewScanner(resp.Body)
		for len(out) < n && sc.Scan() {
			var l Line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatal(err)
			}
			out = append(out, l)
		}
		return out
	}
	ids := func(ls []Line) string {
		var b strings.Builder
		for _, l := range ls {
			b.WriteString(l.RequestID)
		}
		return b.String()
	}
	// admin sees everyone's, the stream's own request left out; then a
	// new one as it comes.
	go func() {
		// Published while admin's stream reads: it arrives live or is
		// kept, either way once.
		f.Publish(&Record{RequestID: "5", User: admin, Method: "DELETE", Path: "/api/v1/namespaces/a/pods/p", Status: 200})
	}()
	all := read("admin", "", 4)
	if ids(all) != "1235" {
		t.Errorf("admin's stream %q, want 1235", ids(all))
	}
	if all[1].Verb != "watch" || all[2].Decision != DecisionUnauthorized || all[3].Verb != "delete" || all[3].Name != "p" {
		t.Errorf("lines %+v", all)
	}
	// alice sees her own only.
	f.Publish(&Record{RequestID: "6", User: alice, Method: "GET", Path: "/api/v1/namespaces/a/pods", Status: 403, Reason: "no"})
	if got := ids(read("alice", "", 2)); got != "26" {
		t.Errorf("alice's stream %q, want her own 2 and 6", got)
	}
	if got := ids(read("admin", "?decision=forbidden", 1)); got != "6" {
		t.Errorf("admin's forbidden lines %q, want 6", got)
	}
	// alice may not widen her view with a filter.
	lf := lineFilter{own: "alice", user: "admin"}
	if lf.keep(&Record{User: admin, Path: "/api/v1/pods"}) {
		t.Error("alice's stream filtered for admin keeps admin's line")
	}
}
