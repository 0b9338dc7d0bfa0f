package gateway

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"github.com/kubegate/kubegate/internal/serving"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/internal/testpki"
)

// servingPair returns the files of an ECDSA (the kubegate default) or an
// RSA serving certificate; the RSA one is what RSA key exchange needs.
func servingPair(t *testing.T, rsaKey bool) *serving.KeyPair {
	t.Helper()
	dir := t.TempDir()
	var certFile, keyFile string
	if rsaKey {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
		if err != nil {
			t.Fatal(err)
		}
		certFile, keyFile = filepath.Join(dir, "rsa.crt"), filepath.Join(dir, "rsa.key")
		if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
			t.Fatal(err)
		}
	} else {
		ca := testpki.NewCA(t, "server-ca")
		certFile, keyFile = ca.Issue(t, testpki.Options{CN: "localhost", IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
			EKUs: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}).WriteFiles(t, dir, "serving")
	}
	kp, err := serving.LoadKeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// serveTLSConfig serves a gateway with tc on the lean path (lean) or on
// net/http alone, and returns its address.
func serveTLSConfig(t *testing.T, lean bool, tc *tls.Config) string {
	t.Helper()
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	up, _ := url.Parse("https://127.0.0.1:1")
	var fast *FastPath
	if lean {
		var err error
		if fast, err = NewFastPath(up, UpstreamTransportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	g, err := New(Config{Upstream: up, FastPath: fast, Authenticator: authn.New(authn.Config{}), Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, shutdown := serve(g, serving.NewHTTPServer(g, tc, discard), ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = shutdown(ctx)
	})
	return ln.Addr().String()
}

// handshake connects to addr offering only suites (nil: Go's defaults)
// with TLS versions up to maxVersion, and returns the handshake's error.
func handshake(addr string, maxVersion uint16, suites ...uint16) error {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{
		InsecureSkipVerify: true, // only the negotiation is under test
		MinVersion:         tls.VersionTLS10,
		MaxVersion:         maxVersion,
		CipherSuites:       suites,
		NextProtos:         []string{"http/1.1"},
	})
	if err != nil {
		return err
	}
	return c.Close()
}

func TestServingCipherSuites(t *testing.T) {
	for _, path := range []struct {
		name string
		lean bool
	}{{"lean", true}, {"net/http", false}} {
		t.Run(path.name, func(t *testing.T) {
			ecdsaPair, rsaPair := servingPair(t, false), servingPair(t, true)
			serveWith := func(kp *serving.KeyPair, f serving.TLSFlags) string {
				tc := serving.ServerTLSConfig(kp, false, nil)
				if err := f.Apply(tc, nil); err != nil {
					t.Fatal(err)
				}
				return serveTLSConfig(t, path.lean, tc)
			}
			cbc := tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA
			rsaKex := []uint16{tls.TLS_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_RSA_WITH_AES_256_GCM_SHA384, tls.TLS_RSA_WITH_AES_128_CBC_SHA}

			def := serveWith(ecdsaPair, serving.TLSFlags{})
			if err := handshake(def, tls.VersionTLS12, cbc); err == nil {
				t.Error("default: a TLS 1.2 client offering only ECDHE-ECDSA-AES128-SHA completed the handshake, want it refused")
			}
			if err := handshake(def, tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256); err != nil {
				t.Errorf("default: TLS 1.2 with ECDHE-ECDSA-AES128-GCM-SHA256: %v", err)
			}
			if err := handshake(def, tls.VersionTLS13); err != nil {
				t.Errorf("default: TLS 1.3: %v", err)
			}
			defRSA := serveWith(rsaPair, serving.TLSFlags{})
			if err := handshake(defRSA, tls.VersionTLS12, rsaKex...); err == nil {
				t.Error("default: a TLS 1.2 client offering only RSA key exchange completed the handshake, want it refused")
			}
			if err := handshake(defRSA, tls.VersionTLS12, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256); err != nil {
				t.Errorf("default: TLS 1.2 with ECDHE-RSA-AES128-GCM-SHA256: %v", err)
			}

			named := serveWith(ecdsaPair, serving.TLSFlags{CipherSuites: []string{"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA"}})
			if err := handshake(named, tls.VersionTLS12, cbc); err != nil {
				t.Errorf("--tls-cipher-suites naming the CBC suite: handshake with it: %v", err)
			}

			tls13 := serveWith(ecdsaPair, serving.TLSFlags{MinVersion: "VersionTLS13"})
			if err := handshake(tls13, tls.VersionTLS12); err == nil {
				t.Error("--tls-min-version VersionTLS13: a TLS 1.2 client completed the handshake")
			}
			if err := handshake(tls13, tls.VersionTLS13); err != nil {
				t.Errorf("--tls-min-version VersionTLS13: TLS 1.3: %v", err)
			}
		})
	}
}
