// Package serving holds what kubegate's TLS servers share: key pairs that
// reload when their files change, the server TLS configuration with the
// cipher suites, versions and curves kube-apiserver's flags take, and the
// http.Server limits. The gateway and the API server both serve with it.
package serving

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kubegate/kubegate/internal/filewatch"
)

// KeyPair is a certificate and key loaded from two files and replaced
// atomically when either file changes (Watch). It serves as a server's
// serving certificate and as a client certificate.
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
