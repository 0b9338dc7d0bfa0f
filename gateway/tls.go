package gateway

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kubegate/kubegate/internal/filewatch"
)

// KeyPair is a certificate and key loaded from two files and replaced
// atomically when either file changes (Watch). It serves as the gateway's
// serving certificate and as its client certificate to the upstream.
type KeyPair struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

// LoadKeyPair reads certFile and keyFile.
func LoadKeyPair(certFile, keyFile string) (*KeyPair, error) {
	kp := &KeyPair{certFile: certFile, keyFile: keyFile}
	if err := kp.reload(); err != nil {
		return nil, err
	}
	return kp, nil
}

func (kp *KeyPair) reload() error {
	certPEM, err := os.ReadFile(kp.certFile)
	if err != nil {
		return fmt.Errorf("read certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(kp.keyFile)
	if err != nil {
		return fmt.Errorf("read key: %w", err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("certificate %s and key %s: %w", kp.certFile, kp.keyFile, err)
	}
	kp.cur.Store(&c)
	return nil
}

// Watch reloads the pair whenever either file changes, until ctx is done.
// A pair that does not load (for example while only one of the two files
// has been replaced) is logged and the previous pair stays in force.
func (kp *KeyPair) Watch(ctx context.Context, interval time.Duration, logger *slog.Logger) error {
	load := func([]byte) error { return kp.reload() }
	if err := filewatch.Watch(ctx, kp.certFile, interval, load, logger); err != nil {
		return err
	}
	return filewatch.Watch(ctx, kp.keyFile, interval, load, logger)
}

// Certificate returns the current pair.
func (kp *KeyPair) Certificate() *tls.Certificate { return kp.cur.Load() }

// GetCertificate is for tls.Config.GetCertificate.
func (kp *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return kp.cur.Load(), nil
}

// GetClientCertificate is for tls.Config.GetClientCertificate.
func (kp *KeyPair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return kp.cur.Load(), nil
}

// ServerTLSConfig returns the gateway's serving TLS configuration: TLS 1.2
// or later, in TLS 1.2 only DefaultCipherSuites, HTTP/2 and HTTP/1.1,
// and, when requestClientCerts is set, client certificates requested but
// neither required nor verified during the handshake, as kube-apiserver
// does (they are verified per request by the authenticators). curves,
// when non-empty, sets the key-exchange groups offered. Session tickets
// stay on for resumption. ApplyTLSFlags changes the suites and the
// minimum version.
func ServerTLSConfig(serving *KeyPair, requestClientCerts bool, curves []tls.CurveID) *tls.Config {
	c := &tls.Config{
		MinVersion:       tls.VersionTLS12,
		CipherSuites:     DefaultCipherSuites(),
		GetCertificate:   serving.GetCertificate,
		NextProtos:       []string{"h2", "http/1.1"},
		CurvePreferences: curves,
	}
	if requestClientCerts {
		c.ClientAuth = tls.RequestClientCert
	}
	return c
}

// DefaultCipherSuites are the TLS 1.2 suites served unless
// --tls-cipher-suites says otherwise: forward-secret key exchange with
// authenticated encryption only (ECDHE with AES-GCM or ChaCha20-Poly1305),
// no CBC, no SHA-1 MAC and no RSA key exchange. TLS 1.3 suites are not
// configurable.
func DefaultCipherSuites() []uint16 {
	return []uint16{
		tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
		tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
		tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	}
}

// ParseCipherSuites maps IANA cipher suite names
// (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, …) to Go's IDs; no names means
// DefaultCipherSuites. Names of insecure suites are accepted, as
// kube-apiserver accepts them; see InsecureCipherSuites.
func ParseCipherSuites(names []string) ([]uint16, error) {
	if len(names) == 0 {
		return DefaultCipherSuites(), nil
	}
	known := map[string]uint16{}
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		known[s.Name] = s.ID
	}
	ids := make([]uint16, 0, len(names))
	for _, n := range names {
		id, ok := known[strings.TrimSpace(n)]
		if !ok {
			return nil, fmt.Errorf("cipher suite %q is not supported; use IANA names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", n)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// InsecureCipherSuites returns the names of the suites among ids that Go
// counts as insecure, for a warning.
func InsecureCipherSuites(ids []uint16) []string {
	var names []string
	for _, s := range tls.InsecureCipherSuites() {
		if slices.Contains(ids, s.ID) {
			names = append(names, s.Name)
		}
	}
	return names
}

// ParseTLSVersion maps VersionTLS12 or VersionTLS13 to Go's version; ""
// means TLS 1.2.
func ParseTLSVersion(name string) (uint16, error) {
	switch name {
	case "", "VersionTLS12":
		return tls.VersionTLS12, nil
	case "VersionTLS13":
		return tls.VersionTLS13, nil
	}
	return 0, fmt.Errorf("TLS version %q is not one of VersionTLS12, VersionTLS13", name)
}

// TLSFlags are the serving TLS settings every serving command takes,
// named after kube-apiserver's flags.
type TLSFlags struct {
	// CipherSuites are IANA names of the TLS 1.2 suites; empty means
	// DefaultCipherSuites.
	CipherSuites []string
	// MinVersion is VersionTLS12 or VersionTLS13; empty means TLS 1.2.
	MinVersion string
}

// Validate names the flag that is wrong.
func (f TLSFlags) Validate() error {
	if _, err := ParseCipherSuites(f.CipherSuites); err != nil {
		return fmt.Errorf("--tls-cipher-suites: %w", err)
	}
	if _, err := ParseTLSVersion(f.MinVersion); err != nil {
		return fmt.Errorf("--tls-min-version: %w", err)
	}
	return nil
}

// Apply sets c's cipher suites and minimum version, warning on logger
// about insecure suites.
func (f TLSFlags) Apply(c *tls.Config, logger *slog.Logger) error {
	if err := f.Validate(); err != nil {
		return err
	}
	c.CipherSuites, _ = ParseCipherSuites(f.CipherSuites)
	c.MinVersion, _ = ParseTLSVersion(f.MinVersion)
	if weak := InsecureCipherSuites(c.CipherSuites); len(weak) > 0 && logger != nil {
		logger.Warn("serving insecure TLS cipher suites", "suites", weak)
	}
	// HTTP/2 requires an ECDHE AES-128-GCM suite in TLS 1.2; without one
	// net/http refuses to serve, so serve HTTP/1.1 only.
	if c.MinVersion < tls.VersionTLS13 && !slices.Contains(c.CipherSuites, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) &&
		!slices.Contains(c.CipherSuites, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256) {
		c.NextProtos = slices.DeleteFunc(slices.Clone(c.NextProtos), func(p string) bool { return p == "h2" })
		if logger != nil {
			logger.Warn("HTTP/2 is off: --tls-cipher-suites names neither TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 nor TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256")
		}
	}
	return nil
}

// ParseCurves maps key-exchange group names (X25519, X25519MLKEM768,
// P256, P384, P521; any case, also secp256r1 style) to Go's IDs.
func ParseCurves(names []string) ([]tls.CurveID, error) {
	var ids []tls.CurveID
	for _, n := range names {
		switch n {
		case "X25519", "x25519":
			ids = append(ids, tls.X25519)
		case "X25519MLKEM768", "x25519mlkem768":
			ids = append(ids, tls.X25519MLKEM768)
		case "P256", "P-256", "p256", "secp256r1", "prime256v1":
			ids = append(ids, tls.CurveP256)
		case "P384", "P-384", "p384", "secp384r1":
			ids = append(ids, tls.CurveP384)
		case "P521", "P-521", "p521", "secp521r1":
			ids = append(ids, tls.CurveP521)
		default:
			return nil, fmt.Errorf("key-exchange group %q is not one of X25519, X25519MLKEM768, P256, P384, P521", n)
		}
	}
	return ids, nil
}

// UpstreamTransportOptions configure NewUpstreamTransport.
type UpstreamTransportOptions struct {
	// CAPEM verifies the upstream's serving certificate; nil means the
	// system roots.
	CAPEM []byte
	// ClientCert is the gateway's client certificate to the upstream (the
	// front-proxy client in request-header mode); nil sends none.
	ClientCert *KeyPair
	// MaxIdleConns is the idle pool size kept to the upstream; zero means
	// 1024, enough for every connection a busy gateway keeps open.
	MaxIdleConns int
	// MaxConns caps the upstream connections, idle, busy and being dialled,
	// that carry requests other than streams; a request that finds none
	// free waits for one, and leaves the queue if its client goes away.
	// Zero means DefaultMaxUpstreamConns.
	MaxConns int
	// MaxStreamConns caps the connections that carry streams: watches,
	// followed logs and upgrades (exec, attach, port-forward), each of
	// which holds its connection for as long as it runs. Zero means
	// DefaultMaxUpstreamStreamConns.
	MaxStreamConns int
	// DialContext opens TCP connections to the upstream; nil means a
	// net.Dialer with a 10 s timeout and 30 s keep-alives.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// defaultDialer opens the gateway's upstream TCP connections.
var defaultDialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}

// defaultMaxIdleConns is the idle pool kept to the upstream: enough for
// every connection a busy gateway keeps open.
const defaultMaxIdleConns = 1024

// upstreamTLSConfig returns the TLS client configuration o describes.
func upstreamTLSConfig(o UpstreamTransportOptions) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAPEM != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(o.CAPEM) {
			return nil, fmt.Errorf("upstream CA: no PEM certificates found")
		}
		tc.RootCAs = pool
	}
	if o.ClientCert != nil {
		tc.GetClientCertificate = o.ClientCert.GetClientCertificate
	}
	return tc, nil
}

const (
	// DefaultMaxUpstreamConns is kube-apiserver's default in-flight
	// limit (400 reads and 200 writes): an API server so configured
	// answers 429 to more concurrent requests anyway.
	DefaultMaxUpstreamConns = 600
	// DefaultMaxUpstreamStreamConns bounds the watches and other streams
	// open through one gateway.
	DefaultMaxUpstreamStreamConns = 8192
)

// NewUpstreamTransport returns the HTTP/1.1 transport the gateway uses to
// reach its upstream. HTTP/1.1 is what lets SPDY and WebSocket upgrades
// (exec, attach, port-forward) pass through; the idle pool is sized so
// that keep-alive traffic never waits to open a new upstream connection.
//
// Requests go through net/http's Transport, which reads informational
// answers up to the final one, pools a connection only after its answer
// was read to the end, replays only requests that are safe to repeat,
// and keeps a dial that completes after its request was cancelled. The
// connection caps bound what a client can make the gateway dial, for
// instance by opening and at once resetting HTTP/2 streams.
func NewUpstreamTransport(o UpstreamTransportOptions) (http.RoundTripper, error) {
	tc, err := upstreamTLSConfig(o)
	if err != nil {
		return nil, err
	}
	o.MaxIdleConns = cmp.Or(o.MaxIdleConns, defaultMaxIdleConns)
	if o.DialContext == nil {
		o.DialContext = defaultDialer.DialContext
	}
	newTransport := func(maxConns int) *http.Transport {
		return &http.Transport{
			Proxy:                 nil, // never send cluster traffic through an environment proxy
			DialContext:           o.DialContext,
			TLSClientConfig:       tc,
			TLSHandshakeTimeout:   10 * time.Second,
			MaxIdleConns:          min(o.MaxIdleConns, maxConns),
			MaxIdleConnsPerHost:   min(o.MaxIdleConns, maxConns),
			MaxConnsPerHost:       maxConns,
			IdleConnTimeout:       90 * time.Second,
			ExpectContinueTimeout: time.Second,
			ForceAttemptHTTP2:     false,
			// The answer reaches the client as the upstream encoded it:
			// the Transport neither asks for gzip nor decodes it.
			DisableCompression: true,
		}
	}
	return &upstreamTransport{
		requests: newTransport(cmp.Or(o.MaxConns, DefaultMaxUpstreamConns)),
		streams:  newTransport(cmp.Or(o.MaxStreamConns, DefaultMaxUpstreamStreamConns)),
	}, nil
}

// upstreamTransport sends streams and other requests over separate
// connection pools, so that long-running streams filling their cap never
// hold up ordinary requests.
type upstreamTransport struct {
	requests, streams *http.Transport
}

func (t *upstreamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if isStream(req) {
		return t.streams.RoundTrip(req)
	}
	return t.requests.RoundTrip(req)
}

// CloseIdleConnections closes the idle connections of both pools.
func (t *upstreamTransport) CloseIdleConnections() {
	t.requests.CloseIdleConnections()
	t.streams.CloseIdleConnections()
}

// isStream reports whether req may hold its connection for long: an
// upgrade, or a stream by its URL (isStreamURL).
func isStream(req *http.Request) bool {
	return req.Header.Get("Upgrade") != "" || isStreamURL(req.URL)
}

// isStreamURL reports whether u asks for a stream: a watch, by the legacy
// /watch/ path or the watch parameter, or a followed log. The decoded
// path and query decide, so that no spelling hides one, and a parameter
// is on unless its first value is "0" or "false", as the API server reads
// it.
func isStreamURL(u *url.URL) bool {
	if strings.Contains(u.Path, "/watch/") {
		return true
	}
	if u.RawQuery == "" {
		return false
	}
	q := u.Query()
	for _, k := range []string{"watch", "follow"} {
		if vs := q[k]; len(vs) > 0 && vs[0] != "0" && !strings.EqualFold(vs[0], "false") {
			return true
		}
	}
	return false
}

// NewHTTPServer returns an http.Server for h with the gateway's limits: headers
// must arrive within 10 s (slowloris), at most 1 MiB of them, and idle
// keep-alive connections close after 2 minutes.
// HTTP/2 is off when tlsConfig does not offer it (see TLSFlags.Apply).
func NewHTTPServer(h http.Handler, tlsConfig *tls.Config, logger *slog.Logger) *http.Server {
	srv := &http.Server{
		Handler:           h,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
	}
	if tlsConfig != nil && !slices.Contains(tlsConfig.NextProtos, "h2") {
		srv.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	return srv
}
