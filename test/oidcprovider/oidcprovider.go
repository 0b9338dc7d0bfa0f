// Package oidcprovider runs a real OpenID provider, Dex, as a separate
// process for tests that authenticate users with OIDC ID tokens. Dex is
// built from the Go module proxy by build.sh at the version dex/go.mod pins
// (not a dependency of kubegate's own module). A Provider keeps its state
// in memory, knows a fixed list of users with groups, and hands out ID
// tokens through the OAuth 2.0 password grant, so a test logs a user in
// with one request. Restart rotates the signing key: Dex makes a new key
// whenever it starts with empty storage, and the issuer URL stays the same.
//
// Dex serves plain HTTP on a loopback port; the test process puts HTTPS in
// front of it, on the issuer's port, with a certificate from a CA of its
// own. The front passes every request through unchanged but one: it drops
// the Cache-Control header of the key set. Dex v2.45 asks clients to keep
// its keys for 10 minutes, and Kubernetes' OIDC authenticator honours that
// (it fetches the keys again for an unknown key ID only once the cached
// ones are within 30 s of expiring), so a new key would be taken only
// minutes after a rotation. Without the header the keys count as expired
// at once, as with providers that send none.
package oidcprovider

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testpki"
	"github.com/kubegate/kubegate/internal/testtool"
	"github.com/kubegate/kubegate/internal/testwait"
)

// Password is every user's password. The provider's user list holds its
// bcrypt hash (cost 10, the lowest Dex accepts), the one Dex's own
// example configuration uses.
const Password = "password"

const passwordHash = "$2a$10$2b2cU8CPhOTaGrs1HRQuAueS7JTT5ZHsHSzYiFPm1leZck7Mc8T4W"

// connectorID is the ID Dex gives its built-in password database; it is
// part of every subject the provider issues.
const connectorID = "local"

// User is one account the provider knows.
type User struct {
	// Email is the login name and the "email" claim; required.
	Email string
	// Name is the "name" claim; empty means Dex's default, the email's
	// local part.
	Name string
	// ID is the user's ID at the provider; the "sub" claim encodes it
	// (see Subject). Empty means Email.
	ID string
	// Groups is the "groups" claim, in order; nil means none.
	Groups []string
}

// Options configure a provider.
type Options struct {
	// ClientID is the OAuth client, and so the ID tokens' audience; empty
	// means "kubernetes".
	ClientID string
	// ClientSecret is the client's secret; empty means a random one.
	ClientSecret string
	// Users are the accounts; at least one.
	Users []User
	// IDTokenLifetime is how long an ID token is valid; zero means 1h.
	IDTokenLifetime time.Duration
}

// Provider is a running Dex.
type Provider struct {
	// Issuer is the issuer URL, https://127.0.0.1:PORT/dex; its discovery
	// document is at Issuer + "/.well-known/openid-configuration".
	Issuer string
	// CAFile is the PEM file of the CA that signed the serving certificate,
	// and CAPEM its contents.
	CAFile string
	CAPEM  []byte
	// ClientID and ClientSecret identify the OAuth client tokens are for.
	ClientID, ClientSecret string

	bin, config string
	client      *http.Client
	front       *http.Server
	cmd         *exec.Cmd
	waited      chan struct{}
	log         *testwait.Buffer
	starts      int
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary returns the path of the Dex binary, running build.sh once per
// process; a first build takes a few minutes, later ones find it cached.
func Binary() (string, error) {
	buildOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		var out, errb bytes.Buffer
		cmd := exec.Command(filepath.Join(filepath.Dir(file), "build.sh"))
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			buildErr = fmt.Errorf("test/oidcprovider/build.sh: %v\n%s", err, errb.String())
			return
		}
		binPath = strings.TrimSpace(out.String())
	})
	return binPath, buildErr
}

// Require returns the Dex binary. When it cannot be built the test is
// skipped, or fails when CI=true, as for any tool a test needs.
func Require(t testing.TB) string {
	t.Helper()
	testtool.Require(t, "go") // build.sh builds with it
	bin, err := Binary()
	if err == nil {
		return bin
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the OpenID provider is required in CI: %v", err)
	}
	t.Skipf("no OpenID provider: %v", err)
	return ""
}

// Start writes the provider's certificates and configuration under a test
// directory, starts Dex and its HTTPS front on free loopback ports and
// waits until it publishes its signing key. Both stop when the test ends.
func Start(t testing.TB, o Options) *Provider {
	t.Helper()
	bin := Require(t)
	if len(o.Users) == 0 {
		t.Fatal("oidcprovider.Start: no users")
	}
	if o.ClientID == "" {
		o.ClientID = "kubernetes"
	}
	if o.ClientSecret == "" {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		o.ClientSecret = hex.EncodeToString(b)
	}
	if o.IDTokenLifetime == 0 {
		o.IDTokenLifetime = time.Hour
	}
	dir := t.TempDir()
	ca := testpki.NewCA(t, "oidc-provider-ca")
	serving := ca.Issue(t, testpki.Options{
		CN:   "oidc-provider",
		IPs:  []net.IP{net.IPv4(127, 0, 0, 1)},
		EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	certFile, keyFile := serving.WriteFiles(t, dir, "serving")
	p := &Provider{
		CAFile:       filepath.Join(dir, "ca.crt"),
		CAPEM:        ca.CertPEM,
		ClientID:     o.ClientID,
		ClientSecret: o.ClientSecret,
		bin:          bin,
		config:       filepath.Join(dir, "dex.json"),
		client: &http.Client{
			Timeout:   10 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}},
		},
		log: &testwait.Buffer{},
	}
	if err := os.WriteFile(p.CAFile, ca.CertPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	// Dex listens on one port; the HTTPS front, at the issuer URL, on another.
	dexAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(testtool.FreePort(t)))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	p.Issuer = "https://" + l.Addr().String() + "/dex"
	cfg, err := configJSON(p, o, dexAddr)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.config, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	p.front = newFront(dexAddr, p.log)
	go func() { _ = p.front.ServeTLS(l, certFile, keyFile) }()
	t.Cleanup(func() { _ = p.front.Close() })
	t.Cleanup(p.stop)
	p.start(t)
	return p
}

// newFront returns the HTTPS front of Dex at addr: a reverse proxy that
// drops the Cache-Control header of the key set (see the package comment).
// While Dex restarts it answers 502, and notes it in log.
func newFront(addr string, log io.Writer) *http.Server {
	target := &url.URL{Scheme: "http", Host: addr}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host
			r.SetXForwarded()
		},
		ModifyResponse: func(resp *http.Response) error {
			if strings.HasSuffix(resp.Request.URL.Path, "/keys") {
				resp.Header.Del("Cache-Control")
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			fmt.Fprintf(log, "--- front: %s %s: %v\n", r.Method, r.URL.Path, err)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	return &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
}

// configJSON is Dex's configuration (YAML, here in its JSON form): memory
// storage, plain HTTP on addr behind the front, the password database with
// the users, and the password grant for the one client.
func configJSON(p *Provider, o Options, addr string) ([]byte, error) {
	type password struct {
		Email    string   `json:"email"`
		Hash     string   `json:"hash"`
		Username string   `json:"username,omitempty"`
		UserID   string   `json:"userID"`
		Groups   []string `json:"groups,omitempty"`
	}
	var users []password
	for _, u := range o.Users {
		if u.Email == "" {
			return nil, errors.New("oidcprovider: a user has no email")
		}
		id := u.ID
		if id == "" {
			id = u.Email
		}
		users = append(users, password{Email: u.Email, Hash: passwordHash, Username: u.Name, UserID: id, Groups: u.Groups})
	}
	cfg := map[string]any{
		"issuer":  p.Issuer,
		"storage": map[string]any{"type": "memory"},
		"web":     map[string]any{"http": addr},
		"logger":  map[string]any{"level": "info"},
		"expiry":  map[string]any{"idTokens": o.IDTokenLifetime.String()},
		"oauth2": map[string]any{
			"passwordConnector":  connectorID,
			"skipApprovalScreen": true,
		},
		"staticClients": []any{map[string]any{
			"id":           p.ClientID,
			"secret":       p.ClientSecret,
			"name":         "Kubernetes",
			"redirectURIs": []string{"http://localhost:8000"},
		}},
		"enablePasswordDB": true,
		"staticPasswords":  users,
	}
	return json.MarshalIndent(cfg, "", "  ")
}

// start runs Dex with the written configuration and waits until its
// discovery document and signing key are served.
func (p *Provider) start(t testing.TB) {
	t.Helper()
	p.starts++
	fmt.Fprintf(p.log, "--- dex start %d\n", p.starts)
	p.cmd = exec.Command(p.bin, "serve", p.config)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start dex: %v", err)
	}
	p.waited = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(p.cmd, p.waited)
	testwait.For(t, 30*time.Second, "the OpenID provider serving its keys", func() (bool, string) {
		select {
		case <-p.waited:
			t.Fatalf("dex exited: %v\n%s", p.cmd.ProcessState, p.log)
		default:
		}
		kids, err := p.KeyIDs()
		if err != nil {
			return false, err.Error()
		}
		return len(kids) > 0, "no keys"
	})
}

// stop ends Dex, if it runs, and waits for it.
func (p *Provider) stop() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.waited:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.waited
	}
	p.cmd = nil
}

// Restart stops Dex and starts it again at the same issuer URL. Its
// storage is in memory, so it comes back with a new signing key and no
// longer publishes the old one; Restart fails the test unless the key IDs
// published afterwards share none with those before.
func (p *Provider) Restart(t testing.TB) {
	t.Helper()
	before, err := p.KeyIDs()
	if err != nil {
		t.Fatal(err)
	}
	p.stop()
	p.start(t)
	after, err := p.KeyIDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range after {
		if slices.Contains(before, k) {
			t.Fatalf("dex restarted with key %s still published (before %v, after %v)", k, before, after)
		}
	}
}

// Log returns everything Dex has written.
func (p *Provider) Log() string { return p.log.String() }

// KeyIDs returns the IDs of the keys the provider publishes.
func (p *Provider) KeyIDs() ([]string, error) {
	var doc struct {
		JWKSURI string `json:"jwks_uri"`
	}
	if err := p.getJSON(p.Issuer+"/.well-known/openid-configuration", &doc); err != nil {
		return nil, err
	}
	var set struct {
		Keys []struct {
			KID string `json:"kid"`
		} `json:"keys"`
	}
	if err := p.getJSON(doc.JWKSURI, &set); err != nil {
		return nil, err
	}
	var kids []string
	for _, k := range set.Keys {
		kids = append(kids, k.KID)
	}
	return kids, nil
}

func (p *Provider) getJSON(u string, v any) error {
	resp, err := p.client.Get(u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// Token logs a user in with the password grant, asking for the openid,
// email, profile and groups scopes, and returns the ID token.
func (p *Provider) Token(ctx context.Context, email, password string) (string, error) {
	form := url.Values{
		"grant_type": {"password"},
		"username":   {email},
		"password":   {password},
		"scope":      {"openid email profile groups"},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(p.ClientID), url.QueryEscape(p.ClientSecret))
	resp, err := p.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("password grant for %s: %w", email, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("password grant for %s: %w", email, err)
	}
	var tok struct {
		IDToken string `json:"id_token"`
		Error   string `json:"error"`
		Desc    string `json:"error_description"`
	}
	if err := json.Unmarshal(body, &tok); err != nil {
		return "", fmt.Errorf("password grant for %s: %s: %w", email, resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK || tok.IDToken == "" {
		return "", fmt.Errorf("password grant for %s: %s: %s %s", email, resp.Status, tok.Error, tok.Desc)
	}
	return tok.IDToken, nil
}

// MustToken is Token that fails the test on error.
func (p *Provider) MustToken(t testing.TB, email string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tok, err := p.Token(ctx, email, Password)
	if err != nil {
		t.Fatalf("%v\ndex log:\n%s", err, p.log)
	}
	return tok
}

// Subject is the "sub" claim the provider issues for a user ID: Dex
// encodes the user ID and its connector's ID as a small protocol buffer
// (field 1, the user ID; field 2, the connector ID) in unpadded base64url.
func Subject(userID string) string {
	var b []byte
	for i, s := range []string{userID, connectorID} {
		b = append(b, byte(i+1)<<3|2) // field i+1, length-delimited
		b = appendVarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// KeyID returns the "kid" in a JWT's header, or "" if it has none. It
// does not verify the token.
func KeyID(token string) string {
	head, _, _ := strings.Cut(token, ".")
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return ""
	}
	var h struct {
		KID string `json:"kid"`
	}
	_ = json.Unmarshal(raw, &h)
	return h.KID
}
