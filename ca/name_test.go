package ca

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"testing"
	"time"
)

func TestValidateName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, value, want string // want "" means accepted
	}{
		{"plain user", "kubernetes-admin", ""},
		{"node user", "system:node:w1", ""},
		{"inner space", "Jane Doe", ""},
		{"non-ASCII", "nakamé 日本", ""},
		{"empty is left to the caller", "", ""},
		{"header injection", "evil\nX-Remote-User: admin", `--cn "evil\nX-Remote-User: admin": contains a control character (U+000A)`},
		{"carriage return", "admin\r", `--cn "admin\r": contains a control character (U+000D)`},
		{"NUL", "ad\x00min", `--cn "ad\x00min": contains a control character (U+0000)`},
		{"tab inside", "ad\tmin", `--cn "ad\tmin": contains a control character (U+0009)`},
		{"DEL", "admin\x7f", `--cn "admin\x7f": contains a control character (U+007F)`},
		{"C1 next line", "ad\u0085min", `--cn "ad\u0085min": contains a control character (U+0085)`},
		{"leading space", " kubernetes-admin", `--cn " kubernetes-admin": begins with whitespace (U+0020)`},
		{"trailing space", "kubernetes-admin ", `--cn "kubernetes-admin ": ends with whitespace (U+0020)`},
		{"both ends", " kubernetes-admin ", `--cn " kubernetes-admin ": begins with whitespace (U+0020)`},
		{"leading no-break space", "\u00a0admin", `--cn "\u00a0admin": begins with whitespace (U+00A0)`},
		{"trailing ideographic space", "admin\u3000", `--cn "admin\u3000": ends with whitespace (U+3000)`},
		{"only a space", " ", `--cn " ": begins with whitespace (U+0020)`},
		{"invalid UTF-8", "ad\xffmin", `--cn "ad\xffmin": is not valid UTF-8`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateName("--cn", tt.value)
			if tt.want == "" {
				if err != nil {
					t.Errorf("ValidateName(%q) = %v, want nil", tt.value, err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("ValidateName(%q) = %v, want %s", tt.value, err, tt.want)
			}
			if !errors.Is(err, ErrUnsafeName) {
				t.Errorf("ValidateName(%q) error does not wrap ErrUnsafeName", tt.value)
			}
		})
	}
}

// rawSubject encodes RDNs of (type, value) pairs in order: a string
// value as a UTF8String, an asn1.RawValue as it is.
func rawSubject(t testing.TB, attrs ...any) []byte {
	t.Helper()
	var seq pkix.RDNSequence
	for i := 0; i < len(attrs); i += 2 {
		v, ok := attrs[i+1].(asn1.RawValue)
		if !ok {
			v = asn1.RawValue{Tag: asn1.TagUTF8String, Bytes: []byte(attrs[i+1].(string))}
		}
		seq = append(seq, pkix.RelativeDistinguishedNameSET{{Type: attrs[i].(asn1.ObjectIdentifier), Value: v}})
	}
	der, err := asn1.Marshal(seq)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func TestSignCSRRefusesUnsafeSubject(t *testing.T) {
	t.Parallel()
	a := newTestCA(t, ECDSAP256)
	tests := []struct {
		name    string
		subject []byte
		want    string
	}{
		{"leading space in CN", rawSubject(t, oidCommonName, " kubernetes-admin", oidOrganization, "devs"),
			`CN " kubernetes-admin": begins with whitespace (U+0020)`},
		{"leading space in O", rawSubject(t, oidOrganization, " system:masters", oidCommonName, "nakam"),
			`O " system:masters": begins with whitespace (U+0020)`},
		{"newline in a CN that a later CN hides", rawSubject(t, oidCommonName, "evil\nX-Remote-User: admin", oidCommonName, "nakam"),
			`subject reads differently in different parsers: it holds more than one CN`},
		{"two CNs", rawSubject(t, oidCommonName, "kubernetes-admin", oidCommonName, "nakam"),
			`subject reads differently in different parsers: it holds more than one CN`},
		// Go leaves these O values out of Organization; OpenSSL prints
		// them as O = system:masters.
		{"an O that Go does not read: UniversalString", rawSubject(t, oidOrganization, "devs",
			oidOrganization, asn1.RawValue{Tag: 28, Bytes: utf32("system:masters")}, oidCommonName, "nakam"),
			`subject reads differently in different parsers: the O (2.5.4.10) attribute's value is not a string`},
		{"an O that Go does not read: OCTET STRING", rawSubject(t, oidOrganization,
			asn1.RawValue{Tag: asn1.TagOctetString, Bytes: []byte("system:masters")}, oidCommonName, "nakam"),
			`subject reads differently in different parsers: the O (2.5.4.10) attribute's value is not a string`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := ParseCSR("csr", makeCSR(t, tt.subject, nil, nil))
			if err != nil {
				t.Fatal(err)
			}
			iss, err := a.SignCSR(req, ProfileClient, 0)
			if err == nil || err.Error() != tt.want {
				t.Errorf("SignCSR() = %v, want %s", err, tt.want)
			}
			if iss != nil {
				t.Errorf("SignCSR() returned a certificate for %s", SubjectString(iss.Cert.RawSubject))
			}
		})
	}
}

func TestRenewRefusesUnsafeSubject(t *testing.T) {
	t.Parallel()
	a := newTestCA(t, ECDSAP256)
	key, _, err := GenerateKey(ECDSAP256)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		RawSubject:   rawSubject(t, oidOrganization, "system:masters ", oidCommonName, "nakam"),
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.Cert, key.Public(), a.Key)
	if err != nil {
		t.Fatal(err)
	}
	old, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	want := `O "system:masters ": ends with whitespace (U+0020)`
	if _, err := a.reissue(old, key.Public(), 0); err == nil || err.Error() != want {
		t.Errorf("reissue() = %v, want %s", err, want)
	}
}

func TestCreateAuthorityRefusesUnsafeName(t *testing.T) {
	t.Parallel()
	want := `create CA ca: common name "kubernetes\n": contains a control character (U+000A)`
	if _, _, err := CreateAuthority("ca", "kubernetes\n", ECDSAP256, 0); err == nil || err.Error() != want {
		t.Errorf("CreateAuthority() = %v, want %s", err, want)
	}
}

// utf32 encodes s as a UniversalString's contents: UCS-4, big-endian.
func utf32(s string) []byte {
	var b []byte
	for _, r := range s {
		b = append(b, byte(r>>24), byte(r>>16), byte(r>>8), byte(r))
	}
	return b
}

// TestSignCSRAsEncodesTheParsedSubject: the CSR signer's certificate holds
// the subject an approver is shown, encoded again from the parsed CN and
// O as kube's signer does. A UID attribute, which kubectl describe csr
// does not show and which kube-apiserver and kubegate read as the user's
// UID, is dropped; a subject that parsers read differently, or a request
// whose signature does not verify, is refused.
func TestSignCSRAsEncodesTheParsedSubject(t *testing.T) {
	t.Parallel()
	a := newTestCA(t, ECDSAP256)
	now := time.Now()
	leaf := Leaf{KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(time.Hour)}
	parse := func(subject []byte) *x509.CertificateRequest {
		t.Helper()
		req, err := ParseCSR("csr", makeCSR(t, subject, nil, nil))
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	uidOID := asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57683, 2}

	iss, err := a.SignCSRAs(parse(rawSubject(t, oidOrganization, "devs", oidCommonName, "alice", uidOID, "victim-uid")), leaf)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, atv := range iss.Cert.Subject.Names {
		got = append(got, fmt.Sprintf("%s=%v", atv.Type, atv.Value))
	}
	if want := []string{"2.5.4.10=devs", "2.5.4.3=alice"}; !slices.Equal(got, want) {
		t.Errorf("issued subject %v, want %v (no UID)", got, want)
	}

	hidden := parse(rawSubject(t, oidOrganization, asn1.RawValue{Tag: 28, Bytes: utf32("system:masters")}, oidCommonName, "alice"))
	if iss, err := a.SignCSRAs(hidden, leaf); !errors.Is(err, ErrHiddenSubject) || iss != nil {
		t.Errorf("a UniversalString O: SignCSRAs() = %v, %v; want ErrHiddenSubject", iss, err)
	}

	forged := parse(rawSubject(t, oidCommonName, "alice"))
	forged.Signature = slices.Clone(forged.Signature)
	forged.Signature[len(forged.Signature)-1] ^= 1
	if iss, err := a.SignCSRAs(forged, leaf); err == nil || iss != nil {
		t.Errorf("a CSR whose signature does not verify: SignCSRAs() = %v, %v; want an error", iss, err)
	}
}
