package main

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kubegate/kubegate/authn/fileconfig"
	"github.com/kubegate/kubegate/authn/jwt"
)

// addAuthnFlags registers kube-apiserver's authentication flags for f.
// saKeyUsage and saLookupUsage say what --service-account-key-file and
// --service-account-lookup mean for the command.
func addAuthnFlags(fs *pflag.FlagSet, f *fileconfig.Flags, saKeyUsage, saLookupUsage string) {
	fs.StringVar(&f.ClientCAFile, "client-ca-file", "", "CA bundle for x509 client certificates: CN is the user, O the groups")
	fs.StringVar(&f.TokenAuthFile, "token-auth-file", "", "static tokens, CSV: token,user,uid,\"group1,group2\"")
	fs.StringArrayVar(&f.SAKeyFiles, "service-account-key-file", nil, saKeyUsage)
	fs.StringArrayVar(&f.SAIssuers, "service-account-issuer", f.SAIssuers, "service-account token issuers accepted; repeatable (kubegate apiserver signs new tokens with the first)")
	fs.StringSliceVar(&f.APIAudiences, "api-audiences", nil, "audiences a token must carry one of; default the issuers")
	fs.BoolVar(&f.SALookup, "service-account-lookup", f.SALookup, saLookupUsage)
	fs.StringVar(&f.RequestHeaderCAFile, "requestheader-client-ca-file", "", "front-proxy CA: only proxies with a cert from it may assert identities in headers")
	fs.StringSliceVar(&f.RequestHeaderAllowedNames, "requestheader-allowed-names", nil, "front-proxy cert CNs allowed; empty means any")
	fs.StringSliceVar(&f.RequestHeaderUsernameHeaders, "requestheader-username-headers", f.RequestHeaderUsernameHeaders, "headers carrying the user name")
	fs.StringSliceVar(&f.RequestHeaderUIDHeaders, "requestheader-uid-headers", f.RequestHeaderUIDHeaders, "headers carrying the UID")
	fs.StringSliceVar(&f.RequestHeaderGroupHeaders, "requestheader-group-headers", f.RequestHeaderGroupHeaders, "headers carrying groups")
	fs.StringSliceVar(&f.RequestHeaderExtraPrefixes, "requestheader-extra-headers-prefix", f.RequestHeaderExtraPrefixes, "header prefixes carrying extra")
	anonUsage := "treat requests without credentials as system:anonymous"
	if f.HealthAnonymous {
		anonUsage = "true: requests without credentials are system:anonymous on every path, RBAC decides (kube-apiserver's meaning); false: nowhere; not given: only on /healthz, /livez, /readyz, /version and their sub-paths"
	}
	fs.BoolVar(&f.AnonymousAuth, "anonymous-auth", f.AnonymousAuth, anonUsage)
	track(fs, "anonymous-auth", &f.AnonymousAuthSet)
	fs.StringVar(&f.AuthenticationConfigFile, "authentication-config", "", "AuthenticationConfiguration file (apiserver.config.k8s.io/v1): JWT issuers with claim mappings and validation rules, and anonymous paths; reloaded when it changes")
	addOIDCFlags(fs, &f.OIDC)
	fs.StringVar(&f.WebhookConfigFile, "authentication-token-webhook-config-file", "", "kubeconfig naming the remote service that reviews bearer tokens (TokenReview); read at start")
	fs.StringVar(&f.WebhookVersion, "authentication-token-webhook-version", f.WebhookVersion, "the authentication.k8s.io TokenReview version to send to and expect from the webhook: v1 or v1beta1")
	fs.DurationVar(&f.WebhookCacheTTL, "authentication-token-webhook-cache-ttl", f.WebhookCacheTTL, "how long the webhook's answers (successes and unknown tokens, never errors) are cached")
	fs.BoolVar(&f.EnableBootstrapTokenAuth, "enable-bootstrap-token-auth", f.EnableBootstrapTokenAuth,
		"accept bootstrap tokens (ID.SECRET), checked against Secrets bootstrap-token-ID of type bootstrap.kubernetes.io/token in kube-system")
}

// addOIDCFlags registers kube-apiserver's legacy --oidc-* flags, which
// configure one JWT issuer.
func addOIDCFlags(fs *pflag.FlagSet, o *jwt.OIDCFlags) {
	fs.StringVar(&o.IssuerURL, "oidc-issuer-url", "", "URL of the OpenID issuer (https only); with --oidc-client-id, turns on OIDC tokens")
	fs.StringVar(&o.ClientID, "oidc-client-id", "", "client ID the tokens must be issued for (their audience)")
	fs.StringVar(&o.CAFile, "oidc-ca-file", "", "CA that verifies the issuer's serving certificate (default: the host's roots)")
	fs.StringVar(&o.UsernameClaim, "oidc-username-claim", o.UsernameClaim, "claim naming the user")
	fs.StringVar(&o.UsernamePrefix, "oidc-username-prefix", "", "prefix of user names; default ISSUER# for claims other than email; - for none")
	fs.StringVar(&o.GroupsClaim, "oidc-groups-claim", "", "claim listing the user's groups (a string or an array of strings)")
	fs.StringVar(&o.GroupsPrefix, "oidc-groups-prefix", "", "prefix of group names")
	fs.Var(requiredClaims{&o.RequiredClaims}, "oidc-required-claim", "CLAIM=VALUE a token must carry; repeatable")
	fs.StringSliceVar(&o.SigningAlgs, "oidc-signing-algs", o.SigningAlgs, "JOSE algorithms accepted")
	for _, name := range []string{"oidc-issuer-url", "oidc-client-id", "oidc-ca-file", "oidc-username-claim", "oidc-username-prefix",
		"oidc-groups-claim", "oidc-groups-prefix", "oidc-required-claim", "oidc-signing-algs"} {
		track(fs, name, &o.Set)
	}
}

// requiredClaims is --oidc-required-claim: CLAIM=VALUE, repeatable, the
// value taken whole (commas included).
type requiredClaims struct{ m *map[string]string }

func (r requiredClaims) String() string {
	if r.m == nil || len(*r.m) == 0 {
		return ""
	}
	var parts []string
	for k, v := range *r.m {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

func (r requiredClaims) Set(s string) error {
	k, v, err := jwt.ParseRequiredClaim(s)
	if err != nil {
		return err
	}
	if *r.m == nil {
		*r.m = map[string]string{}
	}
	(*r.m)[k] = v
	return nil
}

func (requiredClaims) Type() string { return "CLAIM=VALUE" }

// track makes the flag name record in *set that it was given.
func track(fs *pflag.FlagSet, name string, set *bool) {
	f := fs.Lookup(name)
	f.Value = tracker{Value: f.Value, set: set}
}

type tracker struct {
	pflag.Value
	set *bool
}

func (t tracker) Set(s string) error {
	*t.set = true
	return t.Value.Set(s)
}

// Type keeps the wrapped flag's type, so that a boolean flag still takes
// no value.
func (t tracker) Type() string { return t.Value.Type() }
