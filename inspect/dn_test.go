package inspect

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/internal/testpki"
)

// TestFormatNameMatchesOpenSSL prints tricky subjects and compares them
// with what `openssl x509 -noout -subject` prints for the same cert.
func TestFormatNameMatchesOpenSSL(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("openssl is required in CI but is not installed")
		}
		t.Skip("openssl not installed")
	}
	uid := pkix.AttributeTypeAndValue{Type: asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57683, 2}, Value: "uid-1"}
	tests := []struct {
		name  string
		opts  testpki.Options
		names []pkix.AttributeTypeAndValue
	}{
		{name: "plain", opts: testpki.Options{CN: "nakam", Orgs: []string{"devops", "devs"}}},
		{name: "uid", opts: testpki.Options{CN: "nakam", ExtraNames: []pkix.AttributeTypeAndValue{uid}}},
		{name: "quoting", opts: testpki.Options{CN: "a,b+c<d>e;f"}},
		{name: "leading hash", opts: testpki.Options{CN: "#lead"}},
		{name: "leading and trailing space", opts: testpki.Options{CN: " both "}},
		{name: "backslash and quote", opts: testpki.Options{CN: `a\b"c`}},
		{name: "control", opts: testpki.Options{CN: "tab\there\x7f"}},
		{name: "utf8", opts: testpki.Options{CN: "nakamé", Orgs: []string{"日本"}}},
		{name: "equals", opts: testpki.Options{CN: "a=b", Orgs: []string{"system:masters"}}},
		{name: "many types", opts: testpki.Options{CN: "x", ExtraNames: []pkix.AttributeTypeAndValue{
			{Type: asn1.ObjectIdentifier{2, 5, 4, 6}, Value: "JP"},
			{Type: asn1.ObjectIdentifier{2, 5, 4, 8}, Value: "Tokyo"},
			{Type: asn1.ObjectIdentifier{2, 5, 4, 11}, Value: "sre"},
			{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}, Value: "example"},
			{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 1}, Value: "u1"},
			{Type: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 9, 1}, Value: "a@example.com"},
			{Type: asn1.ObjectIdentifier{2, 5, 4, 5}, Value: "1234"},
		}}},
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testpki.SelfSigned(t, tt.opts)
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".crt")
			if err := os.WriteFile(path, c.CertPEM, 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(openssl, "x509", "-in", path, "-noout", "-subject").Output()
			if err != nil {
				t.Fatal(err)
			}
			want := strings.TrimPrefix(strings.TrimRight(string(out), "\n"), "subject=")
			if got := formatName(c.Cert.RawSubject); got != want {
				t.Errorf("formatName = %q, openssl prints %q", got, want)
			}
		})
	}
}

func TestUIDProblems(t *testing.T) {
	t.Parallel()
	oid := asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57683, 2}
	tests := []struct {
		name    string
		names   []pkix.AttributeTypeAndValue
		wantUID string
		problem string
	}{
		{name: "none"},
		{name: "one", names: []pkix.AttributeTypeAndValue{{Type: oid, Value: "u"}}, wantUID: "u"},
		{name: "empty", names: []pkix.AttributeTypeAndValue{{Type: oid, Value: ""}}, problem: "is empty"},
		{name: "two", names: []pkix.AttributeTypeAndValue{{Type: oid, Value: "a"}, {Type: oid, Value: "b"}}, problem: "2 UID attributes"},
		{name: "not a string", names: []pkix.AttributeTypeAndValue{{Type: oid, Value: 7}}, problem: "not a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := subjectIdentity("cn", nil, tt.names)
			if id.UID != tt.wantUID {
				t.Errorf("UID = %q, want %q", id.UID, tt.wantUID)
			}
			got := strings.Join(id.Problems, "; ")
			if (tt.problem == "") != (got == "") || !strings.Contains(got, tt.problem) {
				t.Errorf("problems = %q, want %q", got, tt.problem)
			}
		})
	}
	t.Run("empty CN", func(t *testing.T) {
		t.Parallel()
		c := testpki.SelfSigned(t, testpki.Options{Orgs: []string{"g"}})
		id := certIdentity(c.Cert)
		if len(id.Problems) != 1 || !strings.Contains(id.Problems[0], "empty CN") {
			t.Errorf("problems = %q, want the empty CN", id.Problems)
		}
	})
	t.Run("no EKU is any usage", func(t *testing.T) {
		t.Parallel()
		c := testpki.SelfSigned(t, testpki.Options{CN: "x", NoEKU: true})
		if id := certIdentity(c.Cert); len(id.Problems) != 0 {
			t.Errorf("problems = %q, want none (no EKU extension allows client auth)", id.Problems)
		}
	})
}
