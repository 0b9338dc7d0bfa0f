package fileconfig

import (
	"time"

	"github.com/kubegate/kubegate/authn/jwt"
	"github.com/kubegate/kubegate/authn/requestheader"
	"github.com/kubegate/kubegate/authn/webhook"
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
	// SAKeyFiles needs SAIssuers. APIAudiences empty means SAIssuers,
	// as in kube-apiserver. SALookup checks that the objects a legacy
	// service-account token names still exist (--service-account-lookup);
	// bound tokens are always checked when a lookup is possible.
	SALookup bool // default true

	RequestHeaderCAFile          string
	RequestHeaderAllowedNames    []string
	RequestHeaderUsernameHeaders []string
	RequestHeaderUIDHeaders      []string
	RequestHeaderGroupHeaders    []string
	RequestHeaderExtraPrefixes   []string

	AnonymousAuth bool
	// AnonymousAuthSet records that --anonymous-auth was given, which an
	// authentication configuration with an anonymous section forbids.
	AnonymousAuthSet bool
	// HealthAnonymous, when --anonymous-auth is not given and no
	// authentication configuration has an anonymous section, makes a
	// request without credentials anonymous on authn.HealthPaths and the
	// paths under them only (docs/kubernetes-behaviour.md, A.5). The
	// gateway's default; kube-apiserver's is anonymous everywhere.
	HealthAnonymous bool

	// AuthenticationConfigFile is --authentication-config: JWT
	// authenticators and anonymous settings, reloaded when it changes.
	AuthenticationConfigFile string
	// OIDC are the legacy --oidc-* flags.
	OIDC jwt.OIDCFlags

	// WebhookConfigFile is a kubeconfig naming the TokenReview service
	// (--authentication-token-webhook-config-file); empty turns webhook
	// token authentication off. WebhookVersion is the TokenReview version
	// it speaks (--authentication-token-webhook-version, default
	// v1beta1; empty means the default), WebhookCacheTTL how long its
	// answers are remembered (--authentication-token-webhook-cache-ttl,
	// default 2m).
	WebhookConfigFile string
	WebhookVersion    string
	WebhookCacheTTL   time.Duration

	// EnableBootstrapTokenAuth accepts bootstrap tokens, checked against
	// Secrets in kube-system (--enable-bootstrap-token-auth, A.10); it
	// needs Options.BootstrapGetter.
	EnableBootstrapTokenAuth bool
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
		OIDC:                         jwt.DefaultOIDCFlags(),
		WebhookVersion:               webhook.DefaultVersion,
		WebhookCacheTTL:              webhook.DefaultCacheTTL,
	}
}

// Configured reports whether f turns on any authenticator.
func (f *Flags) Configured() bool {
	return f.ClientCAFile != "" || f.TokenAuthFile != "" || len(f.SAKeyFiles) > 0 || f.RequestHeaderCAFile != "" || f.AnonymousAuth ||
		f.AuthenticationConfigFile != "" || f.OIDC.IssuerURL != "" || f.WebhookConfigFile != "" || f.EnableBootstrapTokenAuth
}
