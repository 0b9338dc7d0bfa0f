package inspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testgolden"
)

func fixtureOptions(t *testing.T, ca, key string) Options {
	t.Helper()
	o := Options{Now: func() time.Time { return fixtureNow }}
	if ca != "" {
		roots, err := ParseCAs(readFixture(t, ca))
		if err != nil {
			t.Fatal(err)
		}
		o.Roots, o.RootsName = roots, ca
	}
	if key != "" {
		keys, err := ParseVerifyKeys(readFixture(t, key))
		if err != nil {
			t.Fatal(err)
		}
		o.Keys, o.KeysName = keys, key
	}
	return o
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name, input, ca, key string
		json                 bool
		now                  time.Time
	}{
		{name: "cert", input: "admin.crt", ca: "ca.crt"},
		{name: "cert-json", input: "admin.crt", ca: "ca.crt", json: true},
		{name: "cert-unverified", input: "admin.crt"},
		{name: "cert-wrong-ca", input: "admin.crt", ca: "other-ca.crt"},
		{name: "cert-expired", input: "admin.crt", ca: "ca.crt", now: time.Date(2027, 2, 3, 4, 5, 6, 0, time.UTC)},
		{name: "cert-not-yet-valid", input: "admin.crt", now: time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC)},
		{name: "bundle", input: "bundle.pem", ca: "ca.crt"},
		{name: "csr", input: "csr.pem"},
		{name: "private-key", input: "sa.key"},
		{name: "public-key", input: "sa.pub"},
		{name: "cert-and-key", input: "cert-and-key.pem"},
		{name: "kubeconfig", input: "admin.conf", key: "sa.pub"},
		{name: "kubeconfig-json", input: "admin.conf", key: "sa.pub", json: true},
		{name: "jwt", input: "bound.jwt", key: "sa.pub"},
		{name: "jwt-json", input: "bound.jwt", key: "sa.pub", json: true},
		{name: "jwt-wrong-key", input: "bound.jwt", key: "admin.crt"},
		{name: "jwt-legacy", input: "legacy.jwt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := fixtureOptions(t, tt.ca, tt.key)
			if !tt.now.IsZero() {
				opts.Now = func() time.Time { return tt.now }
			}
			r, err := Inspect(readFixture(t, tt.input), opts)
			if err != nil {
				t.Fatalf("Inspect(%s): %v", tt.input, err)
			}
			var got bytes.Buffer
			ext := ".txt"
			if tt.json {
				ext = ".json"
				err = r.WriteJSON(&got)
			} else {
				err = r.WriteText(&got)
			}
			if err != nil {
				t.Fatal(err)
			}
			testgolden.Check(t, filepath.Join("testdata", "golden", tt.name+ext), got.Bytes())
		})
	}
}

// TestFacts checks the facts the goldens show against independent
// expectations, so a wrong golden cannot be accepted unnoticed.
func TestFacts(t *testing.T) {
	t.Parallel()
	t.Run("cert", func(t *testing.T) {
		r, err := Inspect(readFixture(t, "admin.crt"), fixtureOptions(t, "ca.crt", ""))
		if err != nil {
			t.Fatal(err)
		}
		c := r.Certificates[0]
		id := c.Identity
		if id.User != "kubernetes-admin" || strings.Join(id.Groups, ",") != "system:masters,kubeadm:cluster-admins" || id.UID != "9b1d2c4e-0000-4000-8000-000000000001" {
			t.Errorf("identity = %+v, want kubernetes-admin in system:masters,kubeadm:cluster-admins (DER SET order) with the fixture UID", id)
		}
		if len(id.Problems) != 0 {
			t.Errorf("problems = %q, want none", id.Problems)
		}
		if !r.Chain.Verified || len(r.Chain.Chain) != 2 {
			t.Errorf("chain = %+v, want verified leaf -> root", r.Chain)
		}
		if c.Status != "valid" || c.TimeLeft != "213d 12h" {
			t.Errorf("validity = %+v, want valid with 213d 12h left at %v", c.Validity, fixtureNow)
		}
		if c.PublicKey.String() != "ECDSA P-256" {
			t.Errorf("public key = %v, want ECDSA P-256", c.PublicKey)
		}
	})
	t.Run("bundle", func(t *testing.T) {
		r, err := Inspect(readFixture(t, "bundle.pem"), fixtureOptions(t, "ca.crt", ""))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Certificates) != 2 || !r.Chain.Verified || len(r.Chain.Chain) != 3 {
			t.Fatalf("got %d certs, chain %+v; want 2 certs verifying through the intermediate", len(r.Certificates), r.Chain)
		}
		if got := r.Certificates[0].TimeLeft; got != "29d 11h" {
			t.Errorf("leaf time left = %q, want 29d 11h", got)
		}
		if p := r.Certificates[0].Identity.Problems; len(p) != 1 || !strings.Contains(p[0], "client-auth") {
			t.Errorf("leaf problems = %q, want the missing client-auth EKU", p)
		}
	})
	t.Run("wrong ca", func(t *testing.T) {
		r, err := Inspect(readFixture(t, "admin.crt"), fixtureOptions(t, "other-ca.crt", ""))
		if err != nil {
			t.Fatal(err)
		}
		if r.Chain.Verified || !strings.Contains(r.Chain.Reason, "unknown authority") {
			t.Errorf("chain = %+v, want unknown authority", r.Chain)
		}
	})
	t.Run("kubeconfig", func(t *testing.T) {
		r, err := Inspect(readFixture(t, "admin.conf"), fixtureOptions(t, "", "sa.pub"))
		if err != nil {
			t.Fatal(err)
		}
		users := map[string]*KubeUser{}
		for _, u := range r.Kubeconfig.Users {
			users[u.Name] = u
		}
		if u := users["kubernetes-admin"]; len(u.Chains) != 1 || !u.Chains[0].Verified || u.KeyMatches == nil || !*u.KeyMatches {
			t.Errorf("admin = %+v, want a verified chain and a matching key", u)
		}
		if u := users["stranger"]; len(u.Chains) != 1 || u.Chains[0].Verified {
			t.Errorf("stranger chains = %+v, want one failed verification", u.Chains)
		}
		if u := users["builder"]; u.Token == nil || !u.Token.Signature.Verified || u.Token.Identity.User != "system:serviceaccount:ci:builder" {
			t.Errorf("builder token = %+v, want a verified SA token", u.Token)
		}
		if u := users["static"]; u.TokenLength != 36 || u.Token != nil {
			t.Errorf("static = %+v, want an opaque token of 36 characters", u)
		}
	})
	t.Run("jwt", func(t *testing.T) {
		r, err := Inspect(readFixture(t, "bound.jwt"), fixtureOptions(t, "", "sa.pub"))
		if err != nil {
			t.Fatal(err)
		}
		j := r.JWT
		if j.Type != TokenBound || !j.Signature.Verified || j.TimeLeft != "30m 0s" {
			t.Errorf("jwt = %+v, want a verified bound token with 30m left", j)
		}
		wantGroups := "system:serviceaccounts,system:serviceaccounts:ci"
		if g := strings.Join(j.Identity.Groups, ","); g != wantGroups || j.Identity.UID != "0f6b8a1e-2c3d-4e5f-8a9b-0c1d2e3f4a5b" {
			t.Errorf("identity = %+v, want groups %s and the SA UID", j.Identity, wantGroups)
		}
		if got := j.Identity.Extra[credentialIDKey]; len(got) != 1 || got[0] != "JTI=6c1d7a52-5d0e-4b8f-9a33-1f2e3d4c5b6a" {
			t.Errorf("credential-id = %q, want the JTI", got)
		}
	})
	t.Run("legacy jwt", func(t *testing.T) {
		r, err := Inspect(readFixture(t, "legacy.jwt"), fixtureOptions(t, "", "sa.key"))
		if err != nil {
			t.Fatal(err)
		}
		if r.JWT.Type != TokenLegacy || r.JWT.Expires != nil || !r.JWT.Signature.Verified || len(r.JWT.Identity.Problems) != 0 {
			t.Errorf("jwt = %+v, want a verified legacy token that never expires", r.JWT)
		}
	})
}

// TestNoSecrets checks that no private key or opaque token appears in any
// output.
func TestNoSecrets(t *testing.T) {
	t.Parallel()
	secrets := []string{"31ada4fd-adec-460c-809a-9e56ceb75269"}
	for _, f := range []string{"admin.key", "sa.key"} {
		lines := strings.Split(strings.TrimSpace(string(readFixture(t, f))), "\n")
		secrets = append(secrets, lines[1:len(lines)-1]...)
	}
	for _, in := range []string{"admin.conf", "sa.key", "admin.key", "cert-and-key.pem"} {
		r, err := Inspect(readFixture(t, in), fixtureOptions(t, "", ""))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := r.WriteText(&out); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteJSON(&out); err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if strings.Contains(out.String(), s) {
				t.Errorf("output for %s contains secret material %q", in, s)
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	jwt := strings.TrimSpace(string(readFixture(t, "bound.jwt")))
	cert := string(readFixture(t, "admin.crt"))
	tests := []struct {
		name, input string
		want        string
		is          error
	}{
		{name: "empty", input: "", is: ErrEmpty},
		{name: "whitespace", input: " \n\t\n", is: ErrEmpty},
		{name: "truncated PEM", input: cert[:len(cert)/2], want: `truncated PEM: block 1 ("CERTIFICATE")`},
		{name: "missing END", input: strings.Replace(cert, "-----END CERTIFICATE-----", "", 1), want: "truncated PEM"},
		{name: "damaged base64", input: strings.Replace(cert, "M", "!", 3), want: "truncated PEM"},
		{name: "garbage DER in PEM", input: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", want: "PEM block 1 (CERTIFICATE): x509: malformed certificate"},
		{name: "unsupported PEM", input: "-----BEGIN X509 CRL-----\nAAAA\n-----END X509 CRL-----\n", want: `PEM block 1 has unsupported type "X509 CRL"`},
		{name: "binary garbage", input: "\x00\x01\x02\xff\xfe garbage \x80", is: ErrBinary},
		{name: "text garbage", input: "hello, world", is: ErrUnrecognized},
		{name: "kubeconfig without users", input: string(readFixture(t, "no-users.conf")), is: ErrNoUsers},
		{name: "empty kubeconfig", input: "apiVersion: v1\nkind: Config\n", is: ErrNoUsers},
		{name: "kubeconfig of the wrong shape", input: "users: 5\n", want: "parse kubeconfig: "},
		{name: "other YAML", input: "foo: bar\n", is: ErrUnrecognized},
		{name: "JWT with two segments", input: jwt[:strings.LastIndex(jwt, ".")], want: "JWT has 2 segments, want 3"},
		{name: "JWT with four segments", input: jwt + ".abc", want: "JWT has 4 segments, want 3"},
		{name: "JWT payload not JSON", input: strings.SplitN(jwt, ".", 2)[0] + ".bm90IGpzb24.c2ln", want: "JWT payload is not a JSON object"},
		{name: "JWT bad exp", input: strings.SplitN(jwt, ".", 2)[0] + ".eyJleHAiOiJzb29uIn0.c2ln", want: `JWT claim "exp": not a number`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := Inspect([]byte(tt.input), Options{})
			if err == nil {
				t.Fatalf("Inspect = %+v, want an error", r)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error = %q, want %q", err, tt.is)
			}
			if tt.want != "" && !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans several lines", err)
			}
		})
	}
}

func TestKubeconfigBadTokenIsAProblem(t *testing.T) {
	t.Parallel()
	cfg := "users:\n- name: u\n  user:\n    token: eyJhbGciOiJSUzI1NiJ9.bm90LWpzb24.c2ln\n"
	r, err := Inspect([]byte(cfg), Options{})
	if err != nil {
		t.Fatal(err)
	}
	u := r.Kubeconfig.Users[0]
	if u.Token != nil || len(u.Problems) != 1 || !strings.Contains(u.Problems[0], "JWT payload is not a JSON object") {
		t.Errorf("user = %+v, want the undecodable JWT reported as a problem", u)
	}
	var out bytes.Buffer
	if err := r.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "bm90LWpzb24") {
		t.Errorf("text output contains the token:\n%s", out.String())
	}
}

func TestJSONRoundTrip(t *testing.T) {
	t.Parallel()
	r, err := Inspect(readFixture(t, "bundle.pem"), fixtureOptions(t, "ca.crt", ""))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := r.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Certificates) != 2 || back.Certificates[0].PEM == "" {
		t.Fatalf("decoded %d certificates, want 2 with PEM", len(back.Certificates))
	}
	// The PEM in the JSON is the input's PEM, byte for byte.
	if got := back.Certificates[0].PEM + back.Certificates[1].PEM; got != string(readFixture(t, "bundle.pem")) {
		t.Errorf("JSON PEM differs from the input")
	}
}
