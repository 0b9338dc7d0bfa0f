package main

import (
	"github.com/spf13/pflag"

	"github.com/kubegate/kubegate/authn/fileconfig"
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
	fs.BoolVar(&f.AnonymousAuth, "anonymous-auth", f.AnonymousAuth, "treat requests without credentials as system:anonymous")
	fs.BoolVar(&f.EnableBootstrapTokenAuth, "enable-bootstrap-token-auth", f.EnableBootstrapTokenAuth,
		"accept bootstrap tokens (ID.SECRET), checked against Secrets bootstrap-token-ID of type bootstrap.kubernetes.io/token in kube-system")
}
