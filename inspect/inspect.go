// Package inspect explains the credentials a Kubernetes cluster hands out:
// PEM certificates and bundles, CSRs, private and public keys, kubeconfigs
// and JWTs. For each it reports the facts openssl would show plus the
// identity kube-apiserver would map the credential to, whether it verifies,
// and when it expires.
//
// Inspect never returns key material: a private key is reported by type
// and size only, and a token by its decoded header and claims.
//
// Sniff and Inspect accept untrusted input: bad input gives an error of one
// line, never a panic.
package inspect

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"
)

// Kind is what an input holds.
type Kind string

// The kinds of input Inspect understands.
const (
	KindCertificate Kind = "certificate" // one certificate, PEM or DER
	KindBundle      Kind = "bundle"      // several PEM certificates
	KindCSR         Kind = "csr"         // PEM certificate signing requests
	KindPrivateKey  Kind = "private key" // PEM private keys
	KindPublicKey   Kind = "public key"  // PEM public keys
	KindPEM         Kind = "pem"         // PEM blocks of several of the kinds above
	KindKubeconfig  Kind = "kubeconfig"  // a kubeconfig file, YAML or JSON
	KindJWT         Kind = "jwt"         // a compact JWS, such as a service-account token
	kindUnknown     Kind = ""            // returned with an error
)

// Errors for input Sniff cannot classify. Other errors name what is wrong
// with input of a known kind.
var (
	ErrEmpty        = errors.New("input is empty")
	ErrBinary       = errors.New("input is binary data, not a PEM certificate, CSR or key, a DER certificate, a kubeconfig or a JWT")
	ErrUnrecognized = errors.New("input is not a PEM certificate, CSR or key, a kubeconfig or a JWT")
)

// pemKinds maps the PEM block types Inspect understands to their kind.
var pemKinds = map[string]Kind{
	"CERTIFICATE":                  KindCertificate,
	"CERTIFICATE REQUEST":          KindCSR,
	"NEW CERTIFICATE REQUEST":      KindCSR,
	"PRIVATE KEY":                  KindPrivateKey,
	"RSA PRIVATE KEY":              KindPrivateKey,
	"EC PRIVATE KEY":               KindPrivateKey,
	"ENCRYPTED PRIVATE KEY":        KindPrivateKey,
	"PUBLIC KEY":                   KindPublicKey,
	"RSA PUBLIC KEY":               KindPublicKey,
	"TRUSTED CERTIFICATE":          KindCertificate,
	"X509 CERTIFICATE":             KindCertificate,
	"CERTIFICATE REQUEST (PKCS10)": KindCSR,
}

// Sniff reports what data holds, from its shape. It returns an error for
// empty, truncated or unrecognisable input, and for a JWT whose segment
// count is wrong.
func Sniff(data []byte) (Kind, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return kindUnknown, ErrEmpty
	}
	if bytes.Contains(trimmed, []byte("-----BEGIN ")) {
		blocks, err := decodePEM(trimmed)
		if err != nil {
			return kindUnknown, err
		}
		return pemKind(blocks), nil
	}
	if k, err, ok := sniffJWT(trimmed); ok {
		return k, err
	}
	if isText(trimmed) {
		if looksLikeKubeconfig(trimmed) {
			return KindKubeconfig, nil
		}
		return kindUnknown, ErrUnrecognized
	}
	if _, err := x509.ParseCertificate(trimmed); err == nil {
		return KindCertificate, nil
	}
	if _, err := x509.ParseCertificateRequest(trimmed); err == nil {
		return KindCSR, nil
	}
	return kindUnknown, ErrBinary
}

func isText(b []byte) bool {
	return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

// decodePEM returns every PEM block in data, rejecting a BEGIN line with no
// END line and block types Inspect does not understand.
func decodePEM(data []byte) ([]*pem.Block, error) {
	var blocks []*pem.Block
	rest := data
	for {
		begin := bytes.Index(rest, []byte("-----BEGIN "))
		if begin < 0 {
			break
		}
		block, next := pem.Decode(rest)
		if block == nil {
			return nil, fmt.Errorf("truncated PEM: block %d (%s) has no valid END line or its base64 is damaged", len(blocks)+1, beginType(rest[begin:]))
		}
		if _, ok := pemKinds[block.Type]; !ok {
			return nil, fmt.Errorf("PEM block %d has unsupported type %q", len(blocks)+1, block.Type)
		}
		blocks = append(blocks, block)
		rest = next
	}
	if len(blocks) == 0 {
		return nil, ErrUnrecognized
	}
	return blocks, nil
}

// beginType returns the type named on a "-----BEGIN TYPE-----" line, for
// error messages.
func beginType(b []byte) string {
	b = b[len("-----BEGIN "):]
	if i := bytes.IndexAny(b, "\r\n"); i >= 0 {
		b = b[:i]
	}
	b = bytes.TrimSuffix(b, []byte("-----"))
	if len(b) > 40 || !isText(b) {
		return "unnamed"
	}
	return fmt.Sprintf("%q", b)
}

func pemKind(blocks []*pem.Block) Kind {
	kind := pemKinds[blocks[0].Type]
	for _, b := range blocks[1:] {
		if pemKinds[b.Type] != kind {
			return KindPEM
		}
	}
	if kind == KindCertificate && len(blocks) > 1 {
		return KindBundle
	}
	return kind
}

// sniffJWT reports whether b looks like a compact JWS: base64url segments
// separated by dots, the first decoding to a JSON object. ok is false when
// b is not a JWT at all; err is set when it is one with the wrong shape.
func sniffJWT(b []byte) (k Kind, err error, ok bool) {
	for _, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return kindUnknown, nil, false
		}
	}
	segs := bytes.Split(b, []byte("."))
	if len(segs) < 2 {
		return kindUnknown, nil, false
	}
	head, err := base64.RawURLEncoding.DecodeString(string(segs[0]))
	if err != nil || len(bytes.TrimSpace(head)) == 0 || bytes.TrimSpace(head)[0] != '{' {
		return kindUnknown, nil, false
	}
	if len(segs) != 3 {
		return kindUnknown, fmt.Errorf("JWT has %d segments, want 3 (header.payload.signature)", len(segs)), true
	}
	return KindJWT, nil, true
}

// Options change what Inspect checks. The zero value checks nothing that
// needs outside material and uses the current time.
type Options struct {
	// Now returns the time used for validity, time left and chain
	// verification. Nil means time.Now.
	Now func() time.Time
	// Roots are the CA certificates chains are verified against (--ca).
	// Nil means certificates are verified only against a CA the input
	// itself carries (a kubeconfig's cluster CA).
	Roots []*x509.Certificate
	// RootsName names Roots in the output, such as the file they came from.
	RootsName string
	// Keys are the public keys a JWT signature is verified with (--key).
	// Nil means JWT signatures are not checked.
	Keys []crypto.PublicKey
	// KeysName names Keys in the output.
	KeysName string
	// BaseDir resolves relative file references in a kubeconfig. Empty
	// means such references are reported but not read.
	BaseDir string
}

func (o *Options) now() time.Time {
	if o.Now == nil {
		return time.Now()
	}
	return o.Now()
}

// Report is everything Inspect found. Exactly the fields for its Kind are
// set.
type Report struct {
	Kind         Kind           `json:"kind"`
	Certificates []*Certificate `json:"certificates,omitempty"`
	// Chain is the verification of the first certificate, with the
	// others as intermediates; nil when there were no roots to verify with.
	Chain      *Verification `json:"chain,omitempty"`
	CSRs       []*CSR        `json:"csrs,omitempty"`
	Keys       []*Key        `json:"keys,omitempty"`
	Kubeconfig *Kubeconfig   `json:"kubeconfig,omitempty"`
	JWT        *JWT          `json:"jwt,omitempty"`
}

// Inspect classifies data with Sniff and describes it.
func Inspect(data []byte, opts Options) (*Report, error) {
	kind, err := Sniff(data)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimSpace(data)
	r := &Report{Kind: kind}
	now := opts.now()
	switch kind {
	case KindKubeconfig:
		r.Kubeconfig, err = inspectKubeconfig(data, &opts, now)
	case KindJWT:
		r.JWT, err = inspectJWT(string(data), &opts, now)
	default:
		if !bytes.Contains(data, []byte("-----BEGIN ")) {
			return inspectDER(r, data, &opts, now)
		}
		var blocks []*pem.Block
		if blocks, err = decodePEM(data); err == nil {
			err = r.addPEM(blocks, &opts, now)
		}
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

func inspectDER(r *Report, der []byte, opts *Options, now time.Time) (*Report, error) {
	if r.Kind == KindCSR {
		csr, err := x509.ParseCertificateRequest(der)
		if err != nil {
			return nil, fmt.Errorf("parse DER certificate request: %w", err)
		}
		r.CSRs = []*CSR{describeCSR(csr)}
		return r, nil
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse DER certificate: %w", err)
	}
	r.Certificates = []*Certificate{describeCert(cert, now)}
	if opts.Roots != nil {
		r.Chain = verifyChain([]*x509.Certificate{cert}, opts.Roots, opts.RootsName, now, x509.ExtKeyUsageAny)
	}
	return r, nil
}

func (r *Report) addPEM(blocks []*pem.Block, opts *Options, now time.Time) error {
	var certs []*x509.Certificate
	for i, b := range blocks {
		switch pemKinds[b.Type] {
		case KindCertificate:
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return fmt.Errorf("PEM block %d (%s): %w", i+1, b.Type, err)
			}
			certs = append(certs, c)
			r.Certificates = append(r.Certificates, describeCert(c, now))
		case KindCSR:
			c, err := x509.ParseCertificateRequest(b.Bytes)
			if err != nil {
				return fmt.Errorf("PEM block %d (%s): %w", i+1, b.Type, err)
			}
			r.CSRs = append(r.CSRs, describeCSR(c))
		case KindPrivateKey, KindPublicKey:
			k, err := describeKeyBlock(b)
			if err != nil {
				return fmt.Errorf("PEM block %d (%s): %w", i+1, b.Type, err)
			}
			r.Keys = append(r.Keys, k)
		}
	}
	if len(certs) > 0 && opts.Roots != nil {
		r.Chain = verifyChain(certs, opts.Roots, opts.RootsName, now, x509.ExtKeyUsageAny)
	}
	return nil
}

// kubeconfigShape is the top level of a kubeconfig, for sniffing.
type kubeconfigShape struct {
	Kind           string          `json:"kind"`
	Clusters       json.RawMessage `json:"clusters"`
	Users          json.RawMessage `json:"users"`
	Contexts       json.RawMessage `json:"contexts"`
	CurrentContext *string         `json:"current-context"`
}

// looksLikeKubeconfig reports whether b is a YAML or JSON object that
// declares kind Config or has a clusters, users, contexts or
// current-context key.
func looksLikeKubeconfig(b []byte) (ok bool) {
	defer func() {
		// The YAML decoder is third-party code fed untrusted input; a
		// panic there means "not a kubeconfig".
		if recover() != nil {
			ok = false
		}
	}()
	var s kubeconfigShape
	if err := yaml.Unmarshal(b, &s); err != nil {
		return false
	}
	return s.Kind == "Config" || s.Clusters != nil || s.Users != nil || s.Contexts != nil || s.CurrentContext != nil
}

// loadKubeconfig parses a kubeconfig with client-go, as kubectl does.
func loadKubeconfig(b []byte) (cfg *kubeconfigAPI, err error) {
	defer func() {
		if recover() != nil {
			cfg, err = nil, errors.New("kubeconfig cannot be parsed")
		}
	}()
	cfg, err = clientcmd.Load(b)
	if err != nil {
		return nil, fmt.Errorf("parse kubeconfig: %s", strings.Join(strings.Fields(err.Error()), " "))
	}
	return cfg, nil
}
