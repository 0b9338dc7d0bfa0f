package ca

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"

	"github.com/cloudflare/cfssl/config"
	"github.com/cloudflare/cfssl/csr"
	"github.com/cloudflare/cfssl/helpers"

	"github.com/kubegate/kubegate/internal/pemutil"
)

var (
	oidCommonName       = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidOrganization     = asn1.ObjectIdentifier{2, 5, 4, 10}
	oidBasicConstraints = asn1.ObjectIdentifier{2, 5, 29, 19}
)

// Request describes a certificate to issue with a new key.
type Request struct {
	CN   string   // required
	Orgs []string // O values, each its own RDN, in this order
	// Hosts are DNS names and IP addresses for the SAN extension; server
	// and peer profiles need at least one.
	Hosts   []string
	Profile string // client, server or peer; "" means client
	// Validity is the lifetime; 0 means the profile's (DefaultValidity).
	Validity time.Duration
	// KeyAlgorithm of the new key; "" means ECDSAP256.
	KeyAlgorithm KeyAlgorithm
}

// Validate checks r without issuing anything. The CN and every O must
// pass ValidateName.
func (r *Request) Validate() error {
	if strings.TrimSpace(r.CN) == "" {
		return errors.New("common name is empty")
	}
	if err := ValidateName("common name", r.CN); err != nil {
		return err
	}
	for _, o := range r.Orgs {
		if strings.TrimSpace(o) == "" {
			return fmt.Errorf("organization (group) for %q is empty", r.CN)
		}
		if err := ValidateName("organization", o); err != nil {
			return err
		}
	}
	name := r.profileName()
	if _, err := lookupProfile(name); err != nil {
		return err
	}
	if needsSANs(name) && len(r.Hosts) == 0 {
		return fmt.Errorf("profile %s needs at least one SAN (--san)", name)
	}
	if _, _, err := SplitHosts(r.Hosts); err != nil {
		return err
	}
	if r.Validity < 0 {
		return fmt.Errorf("validity %s is negative", r.Validity)
	}
	if r.KeyAlgorithm != "" {
		if _, err := ParseKeyAlgorithm(string(r.KeyAlgorithm)); err != nil {
			return err
		}
	}
	return nil
}

func (r *Request) profileName() string {
	if r.Profile == "" {
		return ProfileClient
	}
	return r.Profile
}

// SplitHosts sorts SAN values into DNS names and IP addresses, rejecting
// anything that is neither.
func SplitHosts(hosts []string) (dns []string, ips []net.IP, err error) {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
			continue
		}
		if !validDNSName(h) {
			return nil, nil, fmt.Errorf("SAN %q is neither an IP address nor a DNS name", h)
		}
		dns = append(dns, h)
	}
	return dns, ips, nil
}

func validDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimPrefix(s, "*."), ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// EncodeSubject returns the DER of a subject with one RDN per O value, in
// order, followed by the CN, all as UTF8String. openssl prints it as
// "O = a, O = b, CN = name"; Go reads Organization [a b].
func EncodeSubject(cn string, orgs []string) ([]byte, error) {
	seq := make(pkix.RDNSequence, 0, len(orgs)+1)
	attr := func(oid asn1.ObjectIdentifier, v string) pkix.RelativeDistinguishedNameSET {
		return pkix.RelativeDistinguishedNameSET{{Type: oid, Value: asn1.RawValue{Tag: asn1.TagUTF8String, Bytes: []byte(v)}}}
	}
	for _, o := range orgs {
		seq = append(seq, attr(oidOrganization, o))
	}
	if cn != "" {
		seq = append(seq, attr(oidCommonName, cn))
	}
	return asn1.Marshal(seq)
}

// Issue generates a key and a certificate for r.
func (a *Authority) Issue(r *Request) (*Issued, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	lp, err := a.leafProfile(r.profileName())
	if err != nil {
		return nil, err
	}
	der, keyPEM, err := a.issueDER(r, lp)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("issue %q: %w", r.CN, err)
	}
	return &Issued{Cert: cert, CertPEM: EncodeCert(der), KeyPEM: keyPEM}, nil
}

// profileTemplate is a signing profile resolved for one CA: the usages,
// CA constraint and signature algorithm every certificate under it
// carries, and its default lifetime. Issuing copies proto, so a batch
// resolves each profile once.
type profileTemplate struct {
	proto  x509.Certificate
	expiry time.Duration
}

// leafProfile resolves the named profile for a.
func (a *Authority) leafProfile(name string) (*profileTemplate, error) {
	p, err := lookupProfile(name)
	if err != nil {
		return nil, err
	}
	lp := &profileTemplate{expiry: p.Expiry}
	if err := a.applyProfile(&lp.proto, p); err != nil {
		return nil, err
	}
	return lp, nil
}

// applyProfile sets tmpl's usages, CA constraint and signature algorithm
// from p. A nil p keeps tmpl's usages (renewal).
func (a *Authority) applyProfile(tmpl *x509.Certificate, p *config.SigningProfile) error {
	if p == nil {
		p = &config.SigningProfile{}
	} else {
		ku, eku, unknown := p.Usages()
		if len(unknown) > 0 {
			return fmt.Errorf("profile has unknown usages %v", unknown)
		}
		tmpl.KeyUsage, tmpl.ExtKeyUsage = ku, eku
	}
	tmpl.BasicConstraintsValid = true
	tmpl.IsCA = p.CAConstraint.IsCA
	tmpl.MaxPathLen = p.CAConstraint.MaxPathLen
	tmpl.MaxPathLenZero = p.CAConstraint.MaxPathLenZero
	tmpl.SignatureAlgorithm = a.sigAlg
	return nil
}

// issueDER generates a key for a validated r and signs its certificate
// under lp, returning the certificate's DER and the key's PEM.
func (a *Authority) issueDER(r *Request, lp *profileTemplate) (der, keyPEM []byte, err error) {
	alg := r.KeyAlgorithm
	if alg == "" {
		alg = ECDSAP256
	}
	key, keyPEM, err := GenerateKey(alg)
	if err != nil {
		return nil, nil, err
	}
	tmpl := lp.proto
	tmpl.RawSubject, err = EncodeSubject(r.CN, r.Orgs)
	if err != nil {
		return nil, nil, fmt.Errorf("encode subject of %q: %w", r.CN, err)
	}
	tmpl.DNSNames, tmpl.IPAddresses, _ = SplitHosts(r.Hosts)
	validity := r.Validity
	if validity == 0 {
		validity = lp.expiry
	}
	der, err = a.signDER(&tmpl, key.Public(), validity)
	if err != nil {
		return nil, nil, fmt.Errorf("issue %q: %w", r.CN, err)
	}
	return der, keyPEM, nil
}

// ParseCSR reads a PEM (or DER) PKCS #10 request and checks its
// signature, with errors that say which of empty, unparsable or
// badly signed the input is. name is used in errors.
func ParseCSR(name string, data []byte) (*x509.CertificateRequest, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("CSR %s is empty", name)
	}
	der := data
	if block := pemutil.First(bytes.TrimSpace(data)); block != nil {
		if block.Type != "CERTIFICATE REQUEST" && block.Type != "NEW CERTIFICATE REQUEST" {
			return nil, fmt.Errorf("CSR %s holds a %s PEM block, not a CERTIFICATE REQUEST", name, block.Type)
		}
		der = block.Bytes
	}
	req, _, err := helpers.ParseCSR(data)
	if err == nil {
		return req, nil
	}
	// helpers.ParseCSR also fails on a bad signature; parse without the
	// check to tell the two apart.
	if _, perr := x509.ParseCertificateRequest(der); perr == nil {
		return nil, fmt.Errorf("CSR %s: signature does not verify with the CSR's own public key", name)
	}
	return nil, fmt.Errorf("CSR %s is not a PEM or DER certificate request", name)
}

// SignCSR signs a parsed, signature-checked CSR under profile, keeping its
// subject byte for byte and its SANs. It refuses CSRs that ask for CA:TRUE
// and CSRs whose subject fails ValidateSubject.
func (a *Authority) SignCSR(req *x509.CertificateRequest, profile string, validity time.Duration) (*Issued, error) {
	p, err := lookupProfile(profile)
	if err != nil {
		return nil, err
	}
	if err := CheckCSR(req); err != nil {
		return nil, err
	}
	if needsSANs(profile) && len(req.DNSNames)+len(req.IPAddresses) == 0 {
		return nil, fmt.Errorf("profile %s needs a CSR with at least one DNS or IP SAN", profile)
	}
	if validity < 0 {
		return nil, fmt.Errorf("validity %s is negative", validity)
	}
	tmpl := &x509.Certificate{
		RawSubject:     req.RawSubject,
		DNSNames:       req.DNSNames,
		IPAddresses:    req.IPAddresses,
		EmailAddresses: req.EmailAddresses,
		URIs:           req.URIs,
	}
	return a.sign(tmpl, req.PublicKey, p, validity)
}

// CheckCSR applies the rules every CSR kubegate signs must pass: its
// subject passes ValidateSubject (every parser reads it alike, and each
// CN and O value is safe in identity headers), and the request does not
// ask for a CA certificate (a basicConstraints extension with CA:TRUE).
func CheckCSR(req *x509.CertificateRequest) error {
	if err := ValidateSubject(req.Subject); err != nil {
		return err
	}
	for _, ext := range req.Extensions {
		if !ext.Id.Equal(oidBasicConstraints) {
			continue
		}
		var bc csr.BasicConstraints
		if _, err := asn1.Unmarshal(ext.Value, &bc); err != nil {
			return fmt.Errorf("CSR basicConstraints extension is malformed: %w", err)
		}
		if bc.IsCA {
			return errors.New("CSR requests a CA certificate (CA:TRUE); only leaf certificates are signed")
		}
	}
	return nil
}

// Leaf is what SignCSRAs gives a certificate besides the CSR's subject,
// SANs and public key: its usages and lifetime, decided by the caller
// (the CSR signer follows the request's spec.usages and its signer's
// lifetime policy).
type Leaf struct {
	KeyUsage    x509.KeyUsage
	ExtKeyUsage []x509.ExtKeyUsage
	// NotBefore and NotAfter are the lifetime; NotAfter is capped at the
	// CA's own expiry.
	NotBefore, NotAfter time.Time
}

// SignCSRAs signs a parsed CSR whose signature verifies and that passes
// CheckCSR as a leaf (CA:FALSE) with leaf's usages and lifetime, and with
// the CSR's DNS, IP, email and URI SANs; no other extension of the CSR is
// copied. The subject is encoded again from its parsed fields, as kube's
// signer does: the certificate holds the names an approver was shown
// (kubectl describe csr), and no other attribute, a UID among them. It
// refuses to sign once the CA has expired or when the lifetime ends
// before it begins.
func (a *Authority) SignCSRAs(req *x509.CertificateRequest, leaf Leaf) (*Issued, error) {
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("CSR signature: %w", err)
	}
	if err := CheckCSR(req); err != nil {
		return nil, err
	}
	notBefore := leaf.NotBefore.UTC().Truncate(time.Second)
	notAfter := leaf.NotAfter.UTC().Truncate(time.Second)
	if notAfter.After(a.Cert.NotAfter) {
		notAfter = a.Cert.NotAfter
	}
	if !a.now().Before(a.Cert.NotAfter) || !notBefore.Before(a.Cert.NotAfter) {
		return nil, fmt.Errorf("%s: the CA expired at %s", a.Name, a.Cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if !notAfter.After(notBefore) {
		return nil, fmt.Errorf("lifetime %s to %s is empty", notBefore.Format(time.RFC3339), notAfter.Format(time.RFC3339))
	}
	return issued(a.signWindow(&x509.Certificate{
		Subject:               req.Subject,
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPAddresses,
		EmailAddresses:        req.EmailAddresses,
		URIs:                  req.URIs,
		KeyUsage:              leaf.KeyUsage,
		ExtKeyUsage:           leaf.ExtKeyUsage,
		BasicConstraintsValid: true,
		SignatureAlgorithm:    a.sigAlg,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
	}, req.PublicKey))
}

// sign completes tmpl under profile p (usages, CA constraint, lifetime)
// and signs it with the CA key. A nil p keeps tmpl's usages (renewal).
func (a *Authority) sign(tmpl *x509.Certificate, pub crypto.PublicKey, p *config.SigningProfile, validity time.Duration) (*Issued, error) {
	if err := a.applyProfile(tmpl, p); err != nil {
		return nil, err
	}
	if validity == 0 && p != nil {
		validity = p.Expiry
	}
	return issued(a.signDER(tmpl, pub, validity))
}

// signDER gives tmpl, whose usages are set, a lifetime of validity from
// now (back-dated by Backdate) and signs it (signWindow).
func (a *Authority) signDER(tmpl *x509.Certificate, pub crypto.PublicKey, validity time.Duration) ([]byte, error) {
	now := a.now()
	tmpl.NotBefore = now.Add(-Backdate).UTC().Truncate(time.Second)
	tmpl.NotAfter = now.Add(validity).UTC().Truncate(time.Second)
	return a.signWindow(tmpl, pub)
}

// signWindow gives tmpl, whose validity window is set, a random serial
// and signs it for pub with the CA key, cutting NotAfter at the CA's
// expiry: a leaf cannot verify after its CA expires.
func (a *Authority) signWindow(tmpl *x509.Certificate, pub crypto.PublicKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, serialLimit)
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	tmpl.SerialNumber = serial
	if tmpl.NotAfter.After(a.Cert.NotAfter) {
		tmpl.NotAfter = a.Cert.NotAfter
	}
	return x509.CreateCertificate(rand.Reader, tmpl, a.Cert, pub, a.Key)
}

// issued is the Issued of a certificate signed as der, or err.
func issued(der []byte, err error) (*Issued, error) {
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &Issued{Cert: cert, CertPEM: EncodeCert(der)}, nil
}

// identityOf is a template with the identity of old: its subject bytes,
// SANs, key usages and EKUs.
func identityOf(old *x509.Certificate) *x509.Certificate {
	return &x509.Certificate{
		RawSubject:     old.RawSubject,
		DNSNames:       old.DNSNames,
		IPAddresses:    old.IPAddresses,
		EmailAddresses: old.EmailAddresses,
		URIs:           old.URIs,
		KeyUsage:       old.KeyUsage,
		ExtKeyUsage:    old.ExtKeyUsage,
	}
}

// serialLimit bounds serial numbers to 128 random bits: unpredictable (so
// a chosen-prefix collision is infeasible) and within RFC 5280's 20 octets.
var serialLimit = new(big.Int).Lsh(big.NewInt(1), 128)

// reissue signs a new certificate for pub with the identity of old: same
// subject bytes, SANs, key usages and EKUs. validity 0 means DefaultValidity.
// A subject that fails ValidateSubject is not given a new lifetime.
func (a *Authority) reissue(old *x509.Certificate, pub crypto.PublicKey, validity time.Duration) (*Issued, error) {
	if err := ValidateSubject(old.Subject); err != nil {
		return nil, err
	}
	if validity == 0 {
		validity = DefaultValidity
	}
	return a.sign(identityOf(old), pub, nil, validity)
}

// resign signs, for a CA rotation, a certificate with the identity, key
// and validity window of old: same subject bytes, SANs, key usages, EKUs,
// NotBefore and NotAfter (cut at the CA's expiry), and a new serial. A
// rotation changes who signed a certificate, never how long it is valid
// (docs/kubernetes-behaviour.md H.6).
func (a *Authority) resign(old *x509.Certificate) (*Issued, error) {
	if err := ValidateSubject(old.Subject); err != nil {
		return nil, err
	}
	tmpl := identityOf(old)
	tmpl.NotBefore, tmpl.NotAfter = old.NotBefore, old.NotAfter
	if err := a.applyProfile(tmpl, nil); err != nil {
		return nil, err
	}
	return issued(a.signWindow(tmpl, old.PublicKey))
}

// SerialHex formats a certificate's serial number as openssl x509
// -serial does: upper-case hexadecimal, two digits per byte, a minus sign
// before a negative one.
func SerialHex(c *x509.Certificate) string {
	if c.SerialNumber == nil {
		return ""
	}
	b := c.SerialNumber.Bytes()
	if len(b) == 0 {
		return "00"
	}
	s := strings.ToUpper(hex.EncodeToString(b))
	if c.SerialNumber.Sign() < 0 {
		s = "-" + s
	}
	return s
}

// SubjectString formats a DER subject in its encoded order, the way
// openssl prints it: "O=devops, O=devs, CN=nakam", with " + " inside a
// multi-valued RDN. Go's pkix.Name.String merges and reorders values, so
// it cannot show what was actually issued.
func SubjectString(raw []byte) string {
	var seq pkix.RDNSequence
	if rest, err := asn1.Unmarshal(raw, &seq); err != nil || len(rest) > 0 {
		return "<malformed subject>"
	}
	names := map[string]string{"2.5.4.3": "CN", "2.5.4.10": "O", "2.5.4.11": "OU", "2.5.4.6": "C",
		"2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.5": "SERIALNUMBER"}
	var b strings.Builder
	for i, rdn := range seq {
		if i > 0 {
			b.WriteString(", ")
		}
		for j, atv := range rdn {
			if j > 0 {
				b.WriteString(" + ")
			}
			t := atv.Type.String()
			if n, ok := names[t]; ok {
				t = n
			}
			fmt.Fprintf(&b, "%s=%v", t, atv.Value)
		}
	}
	return b.String()
}
