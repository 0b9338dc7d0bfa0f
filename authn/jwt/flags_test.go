package jwt_test

import (
	"testing"

	"github.com/kubegate/kubegate/authn/jwt"
)

// --oidc-required-claim takes CLAIM=VALUE trimmed of spaces, the value
// whole, as kube-apiserver's flag does (A.8).
func TestParseRequiredClaim_A8(t *testing.T) {
	for in, want := range map[string][2]string{
		"hd=example.com":     {"hd", "example.com"},
		" hd = example.com ": {"hd", "example.com"},
		"q=a=b,c":            {"q", "a=b,c"},
		"empty=":             {"empty", ""},
	} {
		k, v, err := jwt.ParseRequiredClaim(in)
		if err != nil || k != want[0] || v != want[1] {
			t.Errorf("%q: %q %q %v, want %q %q", in, k, v, err, want[0], want[1])
		}
	}
	for _, bad := range []string{"novalue", "=v", " =v"} {
		if _, _, err := jwt.ParseRequiredClaim(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}
