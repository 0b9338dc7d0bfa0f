package jwt

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/utils/ptr"
)

// OIDCFlags are kube-apiserver's legacy --oidc-* flags, which configure
// one JWT authenticator (A.8).
type OIDCFlags struct {
	IssuerURL      string            // --oidc-issuer-url
	ClientID       string            // --oidc-client-id
	CAFile         string            // --oidc-ca-file
	UsernameClaim  string            // --oidc-username-claim, default "sub"
	UsernamePrefix string            // --oidc-username-prefix
	GroupsClaim    string            // --oidc-groups-claim
	GroupsPrefix   string            // --oidc-groups-prefix
	RequiredClaims map[string]string // --oidc-required-claim key=value, repeatable
	SigningAlgs    []string          // --oidc-signing-algs, default RS256
	// Set records that any --oidc-* flag was given on the command line.
	Set bool
}

// DefaultOIDCFlags returns the flags' defaults.
func DefaultOIDCFlags() OIDCFlags {
	return OIDCFlags{UsernameClaim: "sub", SigningAlgs: []string{"RS256"}}
}

// Check refuses what kube-apiserver refuses: any --oidc-* flag without
// both the issuer URL and the client ID, and --oidc-* flags next to
// --authentication-config.
func (f *OIDCFlags) Check(authenticationConfigFile string) error {
	if !f.Set {
		return nil
	}
	if authenticationConfigFile != "" {
		return errors.New("--authentication-config and the --oidc-* flags are mutually exclusive")
	}
	if f.IssuerURL == "" || f.ClientID == "" {
		return errors.New("--oidc-issuer-url and --oidc-client-id must be given together when any --oidc-* flag is set")
	}
	return nil
}

// Authenticator converts the flags into the JWT authenticator they stand
// for, as kube-apiserver does; ok is false when they configure none.
//
//   - the username prefix "" means, for a claim other than "email", the
//     issuer URL and "#"; the prefix "-" means none;
//   - the groups prefix applies only with a groups claim;
//   - each required claim becomes a claim validation rule;
//   - the CA file's PEM becomes the issuer's certificateAuthority.
func (f *OIDCFlags) Authenticator() (a apiserver.JWTAuthenticator, ok bool, err error) {
	if f.IssuerURL == "" || f.ClientID == "" {
		return a, false, nil
	}
	prefix := f.UsernamePrefix
	if prefix == "" && f.UsernameClaim != "email" {
		prefix = f.IssuerURL + "#"
	}
	if prefix == "-" {
		prefix = ""
	}
	a = apiserver.JWTAuthenticator{
		Issuer: apiserver.Issuer{URL: f.IssuerURL, Audiences: []string{f.ClientID}},
		ClaimMappings: apiserver.ClaimMappings{
			Username: apiserver.PrefixedClaimOrExpression{Claim: f.UsernameClaim, Prefix: ptr.To(prefix)},
		},
	}
	if f.GroupsClaim != "" {
		a.ClaimMappings.Groups = apiserver.PrefixedClaimOrExpression{Claim: f.GroupsClaim, Prefix: ptr.To(f.GroupsPrefix)}
	}
	if f.CAFile != "" {
		pem, err := os.ReadFile(f.CAFile)
		if err != nil {
			return a, false, fmt.Errorf("--oidc-ca-file: %w", err)
		}
		a.Issuer.CertificateAuthority = string(pem)
	}
	claims := make([]string, 0, len(f.RequiredClaims))
	for c := range f.RequiredClaims {
		claims = append(claims, c)
	}
	slices.Sort(claims)
	for _, c := range claims {
		a.ClaimValidationRules = append(a.ClaimValidationRules, apiserver.ClaimValidationRule{Claim: c, RequiredValue: f.RequiredClaims[c]})
	}
	return a, true, nil
}

// ParseRequiredClaim parses one --oidc-required-claim value, key=value,
// both trimmed of spaces as kube-apiserver trims them; the value may
// itself contain "=" (the flag does not split on ",").
func ParseRequiredClaim(s string) (key, value string, err error) {
	key, value, ok := strings.Cut(s, "=")
	key, value = strings.TrimSpace(key), strings.TrimSpace(value)
	if !ok || key == "" {
		return "", "", fmt.Errorf("--oidc-required-claim %q: want CLAIM=VALUE", s)
	}
	return key, value, nil
}
