package inspect

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"flag"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// The committed inputs in testdata were made by TestFixtures with -regen:
//
//	go test ./inspect -run TestFixtures -regen && go test ./inspect -update
//
// Their dates are fixed around fixtureNow, the clock the golden tests use.
var regen = flag.Bool("regen", false, "rewrite the input fixtures in testdata (then run with -update)")

var fixtureNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

const fixtureIssuer = "https://kubernetes.default.svc.cluster.local"

// fixtureFiles are the inputs TestFixtures writes, with what each must
// sniff as.
var fixtureFiles = map[string]Kind{
	"ca.crt":           KindCertificate,
	"ca.key":           KindPrivateKey,
	"admin.crt":        KindCertificate,
	"admin.key":        KindPrivateKey,
	"bundle.pem":       KindBundle,
	"csr.pem":          KindCSR,
	"sa.key":           KindPrivateKey,
	"sa.pub":           KindPublicKey,
	"bound.jwt":        KindJWT,
	"legacy.jwt":       KindJWT,
	"admin.conf":       KindKubeconfig,
	"no-users.conf":    KindKubeconfig,
	"other-ca.crt":     KindCertificate,
	"cert-and-key.pem": KindPEM,
}

func TestFixtures(t *testing.T) {
	if *regen {
		writeFixtures(t)
	}
	for name, want := range fixtureFiles {
		t.Run(name, func(t *testing.T) {
			got, err := Sniff(readFixture(t, name))
			if err != nil || got != want {
				t.Errorf("Sniff(%s) = %q, %v; want %q", name, got, err, want)
			}
		})
	}
}

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type fixtureCert struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func (c fixtureCert) certPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Raw})
}

func (c fixtureCert) keyPEM(t *testing.T) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

func mint(t *testing.T, tmpl *x509.Certificate, key crypto.Signer, parent *fixtureCert) fixtureCert {
	t.Helper()
	signerCert, signerKey := tmpl, key
	if parent != nil {
		signerCert, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signerCert, key.Public(), signerKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return fixtureCert{c, key}
}

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func caTemplate(serial int64, cn string, from time.Time, years int) *x509.Certificate {
	return &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             from,
		NotAfter:              from.AddDate(years, 0, 0),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment | x509.KeyUsageCertSign,
	}
}

func writeFixtures(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	files := map[string][]byte{}

	ca := mint(t, caTemplate(1, "kubernetes", start, 10), rsaKey(t), nil)
	files["ca.crt"] = ca.certPEM()
	files["ca.key"] = ca.keyPEM(t)
	other := mint(t, caTemplate(2, "other-ca", start, 10), ecKey(t), nil)
	files["other-ca.crt"] = other.certPEM()

	admin := mint(t, &x509.Certificate{
		SerialNumber: big.NewInt(0x1d2c3b4a),
		Subject: pkix.Name{
			CommonName:   "kubernetes-admin",
			Organization: []string{"kubeadm:cluster-admins", "system:masters"},
			ExtraNames:   []pkix.AttributeTypeAndValue{{Type: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57683, 2}, Value: "9b1d2c4e-0000-4000-8000-000000000001"}},
		},
		NotBefore:   start,
		NotAfter:    start.AddDate(1, 0, 0),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ecKey(t), &ca)
	files["admin.crt"] = admin.certPEM()
	files["admin.key"] = admin.keyPEM(t)
	files["cert-and-key.pem"] = append(admin.certPEM(), admin.keyPEM(t)...)

	inter := mint(t, caTemplate(3, "kubegate-intermediate", start, 5), ecKey(t), &ca)
	serving := mint(t, &x509.Certificate{
		SerialNumber: big.NewInt(0x0abcdef0123),
		Subject:      pkix.Name{CommonName: "kube-apiserver", Organization: []string{"devops", "devs"}},
		NotBefore:    start,
		NotAfter:     start.AddDate(0, 6, 0).Add(-time.Hour),
		DNSNames:     []string{"kubernetes", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.96.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ecKey(t), &inter)
	files["bundle.pem"] = append(serving.certPEM(), inter.certPEM()...)

	stranger := mint(t, &x509.Certificate{
		SerialNumber: big.NewInt(77),
		Subject:      pkix.Name{CommonName: "stranger"},
		NotBefore:    start,
		NotAfter:     start.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ecKey(t), &other)

	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:  pkix.Name{CommonName: "nakam", Organization: []string{"devops", "devs"}},
		DNSNames: []string{"nakam.example"},
	}, ecKey(t))
	if err != nil {
		t.Fatal(err)
	}
	files["csr.pem"] = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER})

	sa := rsaKey(t)
	files["sa.key"] = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(sa)})
	pubDER, err := x509.MarshalPKIXPublicKey(sa.Public())
	if err != nil {
		t.Fatal(err)
	}
	files["sa.pub"] = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	kid, err := keyID(sa.Public())
	if err != nil {
		t.Fatal(err)
	}
	iat := fixtureNow.Add(-30 * time.Minute).Unix()
	bound := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss": fixtureIssuer,
		"sub": "system:serviceaccount:ci:builder",
		"aud": []string{fixtureIssuer},
		"iat": iat, "nbf": iat, "exp": iat + 3600,
		"jti": "6c1d7a52-5d0e-4b8f-9a33-1f2e3d4c5b6a",
		"kubernetes.io": map[string]any{
			"namespace":      "ci",
			"serviceaccount": map[string]any{"name": "builder", "uid": "0f6b8a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b"},
		},
	})
	bound.Header["kid"] = kid
	files["bound.jwt"] = []byte(sign(t, bound, sa) + "\n")
	legacy := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{
		"iss":                                    legacyIssuer,
		"sub":                                    "system:serviceaccount:kube-system:old-bot",
		"kubernetes.io/serviceaccount/namespace": "kube-system",
		"kubernetes.io/serviceaccount/secret.name":          "old-bot-token-x7k2p",
		"kubernetes.io/serviceaccount/service-account.name": "old-bot",
		"kubernetes.io/serviceaccount/service-account.uid":  "5e4d3c2b-1a09-4876-b543-210fedcba987",
	})
	files["legacy.jwt"] = []byte(sign(t, legacy, sa) + "\n")

	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = "https://127.0.0.1:6443"
	cluster.CertificateAuthorityData = ca.certPEM()
	cfg.Clusters["kubernetes"] = cluster
	for _, u := range []struct {
		name      string
		cert, key []byte
		token     string
		ns        string
	}{
		{"kubernetes-admin", admin.certPEM(), admin.keyPEM(t), "", ""},
		{"builder", nil, nil, sign(t, bound, sa), "ci"},
		{"stranger", stranger.certPEM(), stranger.keyPEM(t), "", ""},
		{"static", nil, nil, "31ada4fd-adec-460c-809a-9e56ceb75269", "default"},
	} {
		a := clientcmdapi.NewAuthInfo()
		a.ClientCertificateData, a.ClientKeyData, a.Token = u.cert, u.key, u.token
		cfg.AuthInfos[u.name] = a
		c := clientcmdapi.NewContext()
		c.Cluster, c.AuthInfo, c.Namespace = "kubernetes", u.name, u.ns
		cfg.Contexts[u.name+"@kubernetes"] = c
	}
	cfg.CurrentContext = "kubernetes-admin@kubernetes"
	if files["admin.conf"], err = clientcmd.Write(*cfg); err != nil {
		t.Fatal(err)
	}
	noUsers := clientcmdapi.NewConfig()
	noUsers.Clusters["kubernetes"] = cluster
	if files["no-users.conf"], err = clientcmd.Write(*noUsers); err != nil {
		t.Fatal(err)
	}

	for name, data := range files {
		if err := os.WriteFile(filepath.Join("testdata", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func sign(t *testing.T, tok *jwt.Token, key crypto.Signer) string {
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
