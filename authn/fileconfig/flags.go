package fileconfig

import (
	"time"

	"github.com/kubegate/kubegate/authn/requestheader"
)

// DefaultIssuer is the service-account issuer kubeadm configures, and the
// default of --service-account-issuer.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// Flags are kube-apiserver's authentication flags, one field each, as
// both `kubegate gateway` and `kubegate apiserver` take them.
type Flags struct {
	ClientCAFile  string
	TokenAuthFile string
	SAKeyFiles    []string
	SAIssuers     []string // default DefaultIssuer
	APIAudiences  []string // default: the issuers
	// SALookup checks that the objects a service-account token names still
	// exist (--service-account-lookup).
	SALookup bool // default true

	RequestHeaderCAFile          string
	RequestHeaderAllowedNames    []string
	RequestHeaderUsernameHeaders []string
	RequestHeaderUIDHeaders      []string
	RequestHeaderGroupHeaders    []string
	RequestHeaderExtraPrefixes   []string

	AnonymousAuth bool
}

// DefaultFlags returns kube-apiserver's defaults, with anonymous
// authentication off.
func DefaultFlags() Flags {
	rh := requestheader.Default()
	return Flags{
		SAIssuers:                    []string{DefaultIssuer},
		SALookup:                     true,
		RequestHeaderUsernameHeaders: rh.UsernameHeaders,
		RequestHeaderUIDHeaders:      rh.UIDHeaders,
		RequestHeaderGroupHeaders:    rh.GroupHeaders,
		RequestHeaderExtraPrefixes:   rh.ExtraHeaderPrefixes,
	}
}

// Configured reports whether f turns on any authenticator.
func (f *Flags) Configured() bool {
	return f.ClientCAFile != "" || f.TokenAuthFile != "" || len(f.SAKeyFiles) > 0 || f.RequestHeaderCAFile != "" || f.AnonymousAuth
}

// Options returns the Options f names, reloading files every interval.
// The service-account lookup (SAGetter, SkipLegacyLookup) is the caller's
// to set.
func (f *Flags) Options(interval time.Duration) Options {
	return Options{
		ClientCAFile: f.ClientCAFile, TokenAuthFile: f.TokenAuthFile,
		SAKeyFiles: f.SAKeyFiles, SAIssuers: f.SAIssuers, APIAudiences: f.APIAudiences,
		RequestHeaderCAFile:          f.RequestHeaderCAFile,
		RequestHeaderAllowedNames:    f.RequestHeaderAllowedNames,
		RequestHeaderUsernameHeaders: f.RequestHeaderUsernameHeaders,
		RequestHeaderUIDHeaders:      f.RequestHeaderUIDHeaders,
		RequestHeaderGroupHeaders:    f.RequestHeaderGroupHeaders,
		RequestHeaderExtraPrefixes:   f.RequestHeaderExtraPrefixes,
		Anonymous:                    f.AnonymousAuth,
		ReloadInterval:               interval,
	}
}
