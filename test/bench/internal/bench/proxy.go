package bench

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

// NewPlainProxy returns the naive baseline: an httputil.ReverseProxy whose
// Rewrite deletes every client-supplied X-Remote-* header and forwards the
// verified client certificate's CommonName as X-Remote-User and each
// Organization as its own X-Remote-Group line, to target over a keep-alive
// pool of upstreamConns idle connections. It must be served with a TLS
// config that requires and verifies client certificates (ServerTLSConfig);
// errors are logged to logger and answered with 502.
func NewPlainProxy(target *url.URL, upstreamConns int, logger *log.Logger) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			for k := range pr.Out.Header {
				if IsRemoteHeader(k) {
					delete(pr.Out.Header, k)
				}
			}
			// The TLS config requires a verified client certificate, so
			// PeerCertificates[0] is always present here.
			leaf := pr.In.TLS.PeerCertificates[0]
			pr.Out.Header.Set("X-Remote-User", leaf.Subject.CommonName)
			for _, o := range leaf.Subject.Organization {
				pr.Out.Header.Add("X-Remote-Group", o)
			}
		},
		Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConns:        upstreamConns,
			MaxIdleConnsPerHost: upstreamConns,
			IdleConnTimeout:     90 * time.Second,
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			logger.Printf("proxy %s %s: %v", r.Method, r.URL.Path, err)
			w.WriteHeader(http.StatusBadGateway)
		},
		ErrorLog: logger,
	}
}

// ServerTLSConfig loads a serving certificate and key and returns a TLS
// config that requires client certificates verifying against the CAs in
// caFile, offering the key exchange groups in curves (nil: Go's defaults).
func ServerTLSConfig(certFile, keyFile, caFile string, curves []tls.CurveID) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("load serving cert %q: %w", certFile, err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("read client CA %q: no PEM certificates found", caFile)
	}
	return &tls.Config{
		Certificates:     []tls.Certificate{cert},
		ClientAuth:       tls.RequireAndVerifyClientCert,
		ClientCAs:        pool,
		MinVersion:       tls.VersionTLS12,
		CurvePreferences: curves,
	}, nil
}
