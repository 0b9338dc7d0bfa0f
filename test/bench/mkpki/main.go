// Command mkpki writes the benchmark's throw-away PKI into -dir: an ECDSA
// P-256 CA, a server certificate for 127.0.0.1 and localhost, and client
// certificates that exercise how each proxy reads the subject:
//
//	ca.crt ca.key              the CA every proxy verifies clients against
//	server.crt server.key      serving cert; server.pem is both, for HAProxy
//	client.crt client.key      CN=bench-user, O=devs+O=devops: one multi-valued
//	                           RDN, as crypto/x509 and cfssl encode several O
//	client-rdns.crt .key       CN=bench-user, O=devs, O=devops as two RDNs, as
//	                           openssl -subj /O=devs/O=devops makes them
//	client-tricky.crt .key     CN and O holding escaped "," and "+" that spell
//	                           O=system:masters if a proxy splits on them
//	untrusted.crt .key         a client cert from another CA; must be refused
//	tokens.csv token.txt       a static token file (--token-auth-file) whose one
//	                           token, in token.txt, is bench-user in devs, devops
//	sa.key sa.pub sa.token     a service-account signing key pair and a token
//	                           for system:serviceaccount:bench:loadgen, issued
//	                           by kube-apiserver's default issuer
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/kubegate/kubegate/authn/serviceaccount"
)

var oidOrganization = asn1.ObjectIdentifier{2, 5, 4, 10}

type issued struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	der  []byte
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkpki:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mkpki", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory to write the PKI into (must exist)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("-dir is required")
	}
	now := time.Now()
	// A benchmark PKI lives for one run; a day covers any run and clock skew.
	ca, err := issue(nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "kubegate-bench-ca"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}, now)
	if err != nil {
		return err
	}
	other, err := issue(nil, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "kubegate-bench-other-ca"},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}, now)
	if err != nil {
		return err
	}
	server := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	clients := []struct {
		name   string
		parent *issued
		subj   pkix.Name
	}{
		{"client", ca, pkix.Name{CommonName: "bench-user", Organization: []string{"devs", "devops"}}},
		{"client-rdns", ca, pkix.Name{CommonName: "bench-user", ExtraNames: []pkix.AttributeTypeAndValue{
			{Type: oidOrganization, Value: "devs"},
			{Type: oidOrganization, Value: "devops"},
		}}},
		{"client-tricky", ca, pkix.Name{
			CommonName:   `bench\user,O=system:masters`,
			Organization: []string{"devs+O=system:masters"},
		}},
		{"untrusted", other, pkix.Name{CommonName: "bench-user", Organization: []string{"system:masters"}}},
	}

	s, err := issue(ca, server, now)
	if err != nil {
		return err
	}
	if err := write(*dir, "ca", ca); err != nil {
		return err
	}
	if err := write(*dir, "server", s); err != nil {
		return err
	}
	for _, c := range clients {
		leaf, err := issue(c.parent, &x509.Certificate{
			Subject:     c.subj,
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}, now)
		if err != nil {
			return err
		}
		if err := write(*dir, c.name, leaf); err != nil {
			return err
		}
	}
	return writeTokens(*dir)
}

// writeTokens writes the static token file and the service-account key
// pair and token.
func writeTokens(dir string) error {
	var secret [24]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return err
	}
	token := hex.EncodeToString(secret[:])
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+`,bench-user,bench-uid,"devs,devops"`+"\n"), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "token.txt"), []byte(token), 0o600); err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return err
	}
	iss, err := serviceaccount.NewIssuer(key, serviceaccount.IssuerOptions{Issuer: "https://kubernetes.default.svc.cluster.local"})
	if err != nil {
		return err
	}
	// A day covers any benchmark run.
	tok, err := iss.Issue(serviceaccount.TokenRequest{Namespace: "bench", Name: "loadgen", UID: "bench-sa-uid", ExpirationSeconds: 24 * 3600})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"sa.key":   pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		"sa.pub":   pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}),
		"sa.token": []byte(tok.Token),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// issue signs tmpl with parent's key, or self-signs it when parent is nil.
func issue(parent *issued, tmpl *x509.Certificate, now time.Time) (*issued, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(24 * time.Hour)
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, key.Public(), signerKey)
	if err != nil {
		return nil, fmt.Errorf("sign %q: %w", tmpl.Subject.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &issued{cert: cert, key: key, der: der}, nil
}

// write stores dir/name.crt and dir/name.key, and for the server also
// dir/server.pem holding both.
func write(dir, name string, c *issued) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		return err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if err := os.WriteFile(filepath.Join(dir, name+".crt"), certPEM, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, name+".key"), keyPEM, 0o600); err != nil {
		return err
	}
	if name == "server" {
		return os.WriteFile(filepath.Join(dir, "server.pem"), append(certPEM, keyPEM...), 0o600)
	}
	return nil
}
