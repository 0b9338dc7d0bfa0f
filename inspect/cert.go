package inspect

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"strings"
	"time"
)

// Certificate describes one X.509 certificate.
type Certificate struct {
	Subject       string    `json:"subject"` // as `openssl x509 -noout -subject` prints it
	Issuer        string    `json:"issuer"`
	Serial        string    `json:"serial"`        // hex, as `openssl x509 -noout -serial` prints it
	SerialDecimal string    `json:"serialDecimal"` // as kube-apiserver logs it (SN=…)
	NotBefore     time.Time `json:"notBefore"`
	NotAfter      time.Time `json:"notAfter"`
	Validity
	PublicKey          KeyInfo  `json:"publicKey"`
	SignatureAlgorithm string   `json:"signatureAlgorithm"`
	IsCA               bool     `json:"isCA"`
	SelfSigned         bool     `json:"selfSigned"`
	DNSNames           []string `json:"dnsNames,omitempty"`
	IPAddresses        []string `json:"ipAddresses,omitempty"`
	EmailAddresses     []string `json:"emailAddresses,omitempty"`
	URIs               []string `json:"uris,omitempty"`
	KeyUsage           []string `json:"keyUsage,omitempty"`    // OpenSSL's names
	ExtKeyUsage        []string `json:"extKeyUsage,omitempty"` // OpenSSL's names
	SubjectKeyID       string   `json:"subjectKeyID,omitempty"`
	AuthorityKeyID     string   `json:"authorityKeyID,omitempty"`
	SHA256             string   `json:"sha256Fingerprint"`
	// Identity is what kube-apiserver maps the certificate to as a client
	// certificate; nil for CA certificates.
	Identity *Identity `json:"identity,omitempty"`
	PEM      string    `json:"pem"`

	cert *x509.Certificate
}

// Validity says whether something is valid at the inspection time and for
// how long.
type Validity struct {
	Status      string `json:"status"`   // "valid", "expired", "not yet valid" or "no expiry"
	TimeLeft    string `json:"timeLeft"` // human-readable, such as "364d 23h"
	SecondsLeft int64  `json:"secondsLeft"`
}

func validity(notBefore, notAfter, now time.Time) Validity {
	left := notAfter.Sub(now)
	v := Validity{Status: "valid", TimeLeft: humanDuration(left), SecondsLeft: int64(left / time.Second)}
	switch {
	case now.After(notAfter):
		v.Status = "expired"
		v.TimeLeft = "expired " + humanDuration(-left) + " ago"
	case now.Before(notBefore):
		v.Status = "not yet valid"
		v.TimeLeft = "not valid for another " + humanDuration(notBefore.Sub(now))
	}
	return v
}

// humanDuration renders d to the two largest of days, hours, minutes and
// seconds.
func humanDuration(d time.Duration) string {
	d = d.Truncate(time.Second)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	s := (d - m*time.Minute) / time.Second
	switch {
	case days > 0:
		return fmt.Sprintf("%dd %dh", days, h)
	case h > 0:
		return fmt.Sprintf("%dh %dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm %ds", m, s)
	}
	return fmt.Sprintf("%ds", s)
}

// KeyInfo is a public key's algorithm and size; never the key itself.
type KeyInfo struct {
	Algorithm string `json:"algorithm"`       // "RSA", "ECDSA", "Ed25519" or "unknown"
	Bits      int    `json:"bits,omitempty"`  // modulus or curve size
	Curve     string `json:"curve,omitempty"` // ECDSA only
}

func (k KeyInfo) String() string {
	switch {
	case k.Curve != "":
		return k.Algorithm + " " + k.Curve
	case k.Bits > 0:
		return fmt.Sprintf("%s %d", k.Algorithm, k.Bits)
	}
	return k.Algorithm
}

func keyInfo(pub crypto.PublicKey) KeyInfo {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return KeyInfo{Algorithm: "RSA", Bits: k.N.BitLen()}
	case *ecdsa.PublicKey:
		p := k.Curve.Params()
		return KeyInfo{Algorithm: "ECDSA", Bits: p.BitSize, Curve: p.Name}
	case ed25519.PublicKey:
		return KeyInfo{Algorithm: "Ed25519", Bits: 256}
	}
	return KeyInfo{Algorithm: "unknown"}
}

// Identity is the user kube-apiserver would authenticate a credential as.
type Identity struct {
	User   string              `json:"user"`
	UID    string              `json:"uid,omitempty"`
	Groups []string            `json:"groups"`
	Extra  map[string][]string `json:"extra,omitempty"`
	// Problems say why kube-apiserver would not accept the credential as
	// this identity; empty when it would.
	Problems []string `json:"problems,omitempty"`
}

// uidOID is the subject attribute kube-apiserver reads a user's UID from
// (feature AllowParsingUserUIDFromCertAuth, on by default since 1.33).
var uidOID = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57683, 2}

// certIdentity maps a subject to a user as kube-apiserver's x509
// authenticator does: user = CN, groups = every O in order, UID from
// uidOID, credential ID = SHA-256 of the DER. eku is nil for a CSR.
func certIdentity(c *x509.Certificate) *Identity {
	id := subjectIdentity(c.Subject.CommonName, c.Subject.Organization, c.Subject.Names)
	id.Extra = map[string][]string{credentialIDKey: {"X509SHA256=" + hexLower(c.Raw)}}
	if len(c.ExtKeyUsage) > 0 || len(c.UnknownExtKeyUsage) > 0 {
		client := false
		for _, u := range c.ExtKeyUsage {
			client = client || u == x509.ExtKeyUsageClientAuth || u == x509.ExtKeyUsageAny
		}
		if !client {
			id.Problems = append(id.Problems, "no client-auth extended key usage: kube-apiserver rejects it as a client certificate")
		}
	}
	return id
}

func subjectIdentity(cn string, orgs []string, names []pkixATV) *Identity {
	id := &Identity{User: cn, Groups: orgs}
	if id.Groups == nil {
		id.Groups = []string{}
	}
	if cn == "" {
		id.Problems = append(id.Problems, "empty CN: kube-apiserver treats the certificate as no credential at all")
	}
	found := 0
	for _, atv := range names {
		if !atv.Type.Equal(uidOID) {
			continue
		}
		found++
		s, ok := atv.Value.(string)
		switch {
		case !ok:
			id.Problems = append(id.Problems, "UID attribute 1.3.6.1.4.1.57683.2 is not a string: kube-apiserver rejects the certificate")
		case s == "":
			id.Problems = append(id.Problems, "UID attribute 1.3.6.1.4.1.57683.2 is empty: kube-apiserver rejects the certificate")
		default:
			id.UID = s
		}
	}
	if found > 1 {
		id.UID = ""
		id.Problems = append(id.Problems, fmt.Sprintf("%d UID attributes 1.3.6.1.4.1.57683.2: kube-apiserver rejects the certificate", found))
	}
	return id
}

func describeCert(c *x509.Certificate, now time.Time) *Certificate {
	d := &Certificate{
		Subject:            formatName(c.RawSubject),
		Issuer:             formatName(c.RawIssuer),
		Serial:             strings.ToUpper(c.SerialNumber.Text(16)),
		SerialDecimal:      c.SerialNumber.String(),
		NotBefore:          c.NotBefore.UTC(),
		NotAfter:           c.NotAfter.UTC(),
		Validity:           validity(c.NotBefore, c.NotAfter, now),
		PublicKey:          keyInfo(c.PublicKey),
		SignatureAlgorithm: sigAlgName(c.SignatureAlgorithm),
		IsCA:               c.IsCA,
		SelfSigned:         isSelfSigned(c),
		DNSNames:           c.DNSNames,
		EmailAddresses:     c.EmailAddresses,
		KeyUsage:           keyUsageNames(c.KeyUsage),
		ExtKeyUsage:        extKeyUsageNames(c.ExtKeyUsage, c.UnknownExtKeyUsage),
		SubjectKeyID:       hexColon(c.SubjectKeyId),
		AuthorityKeyID:     hexColon(c.AuthorityKeyId),
		SHA256:             fingerprint(c.Raw),
		PEM:                string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})),
		cert:               c,
	}
	if len(d.Serial)%2 == 1 {
		d.Serial = "0" + d.Serial
	}
	for _, ip := range c.IPAddresses {
		d.IPAddresses = append(d.IPAddresses, ip.String())
	}
	for _, u := range c.URIs {
		d.URIs = append(d.URIs, u.String())
	}
	if !c.IsCA {
		d.Identity = certIdentity(c)
	}
	return d
}

func isSelfSigned(c *x509.Certificate) bool {
	return string(c.RawSubject) == string(c.RawIssuer) && c.CheckSignatureFrom(c) == nil
}

// Verification is the result of verifying a certificate chain or a
// signature.
type Verification struct {
	Against  string   `json:"against"`         // what was trusted
	Verified bool     `json:"verified"`        // the chain or signature verified
	Chain    []string `json:"chain,omitempty"` // subjects from leaf to root
	Reason   string   `json:"reason,omitempty"`
}

// verifyChain verifies certs[0] with certs[1:] as intermediates against
// roots at now, requiring usage (kube-apiserver requires client auth).
func verifyChain(certs, roots []*x509.Certificate, against string, now time.Time, usage x509.ExtKeyUsage) *Verification {
	v := &Verification{Against: against}
	opts := x509.VerifyOptions{
		Roots:         x509.NewCertPool(),
		Intermediates: x509.NewCertPool(),
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{usage},
	}
	for _, r := range roots {
		opts.Roots.AddCert(r)
	}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	chains, err := certs[0].Verify(opts)
	if err != nil {
		v.Reason = err.Error()
		return v
	}
	v.Verified = true
	for _, c := range chains[0] {
		v.Chain = append(v.Chain, formatName(c.RawSubject))
	}
	return v
}

var keyUsages = []struct {
	bit  x509.KeyUsage
	name string
}{
	{x509.KeyUsageDigitalSignature, "Digital Signature"},
	{x509.KeyUsageContentCommitment, "Non Repudiation"},
	{x509.KeyUsageKeyEncipherment, "Key Encipherment"},
	{x509.KeyUsageDataEncipherment, "Data Encipherment"},
	{x509.KeyUsageKeyAgreement, "Key Agreement"},
	{x509.KeyUsageCertSign, "Certificate Sign"},
	{x509.KeyUsageCRLSign, "CRL Sign"},
	{x509.KeyUsageEncipherOnly, "Encipher Only"},
	{x509.KeyUsageDecipherOnly, "Decipher Only"},
}

func keyUsageNames(ku x509.KeyUsage) []string {
	var names []string
	for _, u := range keyUsages {
		if ku&u.bit != 0 {
			names = append(names, u.name)
		}
	}
	return names
}

var extKeyUsageName = map[x509.ExtKeyUsage]string{
	x509.ExtKeyUsageAny:             "Any Extended Key Usage",
	x509.ExtKeyUsageServerAuth:      "TLS Web Server Authentication",
	x509.ExtKeyUsageClientAuth:      "TLS Web Client Authentication",
	x509.ExtKeyUsageCodeSigning:     "Code Signing",
	x509.ExtKeyUsageEmailProtection: "E-mail Protection",
	x509.ExtKeyUsageIPSECEndSystem:  "IPSec End System",
	x509.ExtKeyUsageIPSECTunnel:     "IPSec Tunnel",
	x509.ExtKeyUsageIPSECUser:       "IPSec User",
	x509.ExtKeyUsageTimeStamping:    "Time Stamping",
	x509.ExtKeyUsageOCSPSigning:     "OCSP Signing",
}

func extKeyUsageNames(ekus []x509.ExtKeyUsage, unknown []asn1.ObjectIdentifier) []string {
	var names []string
	for _, u := range ekus {
		if n, ok := extKeyUsageName[u]; ok {
			names = append(names, n)
		} else {
			names = append(names, fmt.Sprintf("extended key usage %d", u))
		}
	}
	for _, oid := range unknown {
		names = append(names, oid.String())
	}
	return names
}

// hexColon renders b as OpenSSL prints key IDs and fingerprints.
func hexColon(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	var s strings.Builder
	for i, c := range b {
		if i > 0 {
			s.WriteByte(':')
		}
		fmt.Fprintf(&s, "%02X", c)
	}
	return s.String()
}

func fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hexColon(sum[:])
}

func hexLower(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// sigAlgNames are OpenSSL's names for the signature algorithms Go parses.
var sigAlgNames = map[x509.SignatureAlgorithm]string{
	x509.SHA1WithRSA:      "sha1WithRSAEncryption",
	x509.SHA256WithRSA:    "sha256WithRSAEncryption",
	x509.SHA384WithRSA:    "sha384WithRSAEncryption",
	x509.SHA512WithRSA:    "sha512WithRSAEncryption",
	x509.SHA256WithRSAPSS: "rsassaPss (SHA-256)",
	x509.SHA384WithRSAPSS: "rsassaPss (SHA-384)",
	x509.SHA512WithRSAPSS: "rsassaPss (SHA-512)",
	x509.ECDSAWithSHA1:    "ecdsa-with-SHA1",
	x509.ECDSAWithSHA256:  "ecdsa-with-SHA256",
	x509.ECDSAWithSHA384:  "ecdsa-with-SHA384",
	x509.ECDSAWithSHA512:  "ecdsa-with-SHA512",
	x509.PureEd25519:      "ED25519",
}

func sigAlgName(a x509.SignatureAlgorithm) string {
	if n, ok := sigAlgNames[a]; ok {
		return n
	}
	return a.String()
}
