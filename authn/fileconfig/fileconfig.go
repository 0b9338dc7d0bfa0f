// Package fileconfig builds kube-apiserver's authentication chain from the
// files its flags name (--client-ca-file, --token-auth-file,
// --service-account-key-file, --requestheader-client-ca-file, …) and keeps
// each authenticator current as its file changes. The gateway and the API
// server share it, so both read and reload credentials the same way.
package fileconfig

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/bootstrap"
	"github.com/kubegate/kubegate/authn/requestheader"
	"github.com/kubegate/kubegate/authn/serviceaccount"
	"github.com/kubegate/kubegate/authn/tokenfile"
	"github.com/kubegate/kubegate/authn/webhook"
	authx509 "github.com/kubegate/kubegate/authn/x509"
	"github.com/kubegate/kubegate/internal/filewatch"
)

// Options are the authentication flags plus what the caller supplies at
// run time. An empty file name turns that authenticator off.
type Options struct {
	Flags
	// SAGetter looks up the objects a service-account token names; nil
	// trusts tokens on signature and claims alone. With Flags.SALookup
	// false only bound tokens are looked up.
	SAGetter serviceaccount.Getter
	// BootstrapGetter reads the Secrets of bootstrap tokens; it is
	// required when Flags.EnableBootstrapTokenAuth is set.
	BootstrapGetter bootstrap.Getter
	// ReloadInterval is how often files are checked; zero means
	// filewatch.DefaultInterval.
	ReloadInterval time.Duration
	// JWTHealthPoll is how often the issuers of a reloaded authentication
	// configuration are checked before it takes over; zero means 10 s.
	// JWTUpdateTimeout bounds that wait; zero means a minute. A
	// configuration whose issuers did not answer in time is tried again
	// as often, until the file changes.
	JWTHealthPoll, JWTUpdateTimeout time.Duration
}

// Audiences returns the API audiences o stands for.
func (o *Options) Audiences() []string {
	if len(o.APIAudiences) > 0 {
		return slices.Clone(o.APIAudiences)
	}
	return slices.Clone(o.SAIssuers)
}

// Load reads every file, checks it, and starts reloading it until ctx is
// done; a file that changes into something invalid is logged and the old
// contents stay in force. It returns the authn.Config to pass to
// authn.New. Errors name the flag and the file.
func Load(ctx context.Context, o Options, logger *slog.Logger) (_ authn.Config, err error) {
	// What Load starts (file watches, key fetches) stops at once if it
	// fails part way.
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	if logger == nil {
		logger = slog.Default()
	}
	interval := o.ReloadInterval
	if interval == 0 {
		interval = filewatch.DefaultInterval
	}
	ac := authn.Config{Anonymous: o.AnonymousAuth, TokenCache: authn.DefaultCacheOptions(), APIAudiences: o.Audiences()}
	if o.HealthAnonymous && !o.AnonymousAuthSet {
		// An anonymous section of --authentication-config replaces this.
		ac.Anonymous, ac.AnonymousTrees = true, authn.HealthPaths()
	}
	watch := func(flag, path string, load filewatch.LoadFunc) error {
		if err := filewatch.Watch(ctx, path, interval, load, logger); err != nil {
			return fmt.Errorf("%s: %w", flag, err)
		}
		return nil
	}
	readFile := func(flag, path string) ([]byte, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		return b, nil
	}
	var clientCA []byte
	if o.ClientCAFile != "" {
		var err error
		if clientCA, err = readFile("--client-ca-file", o.ClientCAFile); err != nil {
			return ac, err
		}
		x, err := authx509.New(clientCA, authx509.Options{})
		if err != nil {
			return ac, fmt.Errorf("--client-ca-file %s: %w", o.ClientCAFile, err)
		}
		if err := watch("--client-ca-file", o.ClientCAFile, x.Load); err != nil {
			return ac, err
		}
		ac.X509 = x
	}
	if o.RequestHeaderCAFile != "" {
		caPEM, err := readFile("--requestheader-client-ca-file", o.RequestHeaderCAFile)
		if err != nil {
			return ac, err
		}
		if err := requestheader.CheckSharedCA(caPEM, clientCA, o.RequestHeaderAllowedNames); err != nil {
			return ac, fmt.Errorf("--requestheader-client-ca-file: %w", err)
		}
		rh, err := requestheader.New(caPEM, requestheader.Options{
			AllowedNames:        o.RequestHeaderAllowedNames,
			UsernameHeaders:     o.RequestHeaderUsernameHeaders,
			UIDHeaders:          o.RequestHeaderUIDHeaders,
			GroupHeaders:        o.RequestHeaderGroupHeaders,
			ExtraHeaderPrefixes: o.RequestHeaderExtraPrefixes,
		})
		if err != nil {
			return ac, fmt.Errorf("--requestheader-*: %w", err)
		}
		if err := watch("--requestheader-client-ca-file", o.RequestHeaderCAFile, rh.Load); err != nil {
			return ac, err
		}
		ac.RequestHeader = rh
	}
	if o.TokenAuthFile != "" {
		tf, err := tokenfile.NewFromFile(o.TokenAuthFile)
		if err != nil {
			return ac, fmt.Errorf("--token-auth-file: %w", err)
		}
		for _, w := range tf.Warnings() {
			logger.Warn("token file", "file", o.TokenAuthFile, "warning", w)
		}
		if err := watch("--token-auth-file", o.TokenAuthFile, tf.Load); err != nil {
			return ac, err
		}
		ac.StaticTokens = append(ac.StaticTokens, tf)
	}
	if len(o.SAKeyFiles) > 0 {
		sa, err := serviceaccount.NewFromFiles(serviceaccount.Options{Issuers: o.SAIssuers, Audiences: ac.APIAudiences,
			Getter: o.SAGetter, SkipLegacyLookup: !o.SALookup}, o.SAKeyFiles...)
		if err != nil {
			return ac, fmt.Errorf("--service-account-key-file: %w", err)
		}
		reload := func([]byte) error { return sa.LoadFiles(o.SAKeyFiles...) }
		for _, f := range o.SAKeyFiles {
			if err := watch("--service-account-key-file", f, reload); err != nil {
				return ac, err
			}
		}
		ac.Tokens = append(ac.Tokens, sa)
	}
	// bootstrap tokens come after service-account tokens, as in kube-apiserver (A.0)
	if o.EnableBootstrapTokenAuth {
		if o.BootstrapGetter == nil {
			return ac, errors.New("--enable-bootstrap-token-auth: no way to read Secrets here")
		}
		ac.Tokens = append(ac.Tokens, bootstrap.New(o.BootstrapGetter, bootstrap.Options{Logger: logger}))
	}
	// JWT authenticators come after service-account and bootstrap tokens,
	// as in kube-apiserver (A.0).
	if err := loadJWT(ctx, o, interval, logger, &ac); err != nil {
		return ac, err
	}
	// the webhook comes last among tokens, as in kube-apiserver (A.0)
	if o.WebhookVersion != "" {
		if err := webhook.CheckVersion(o.WebhookVersion); err != nil {
			return ac, fmt.Errorf("--authentication-token-webhook-version: %w", err)
		}
	}
	if o.WebhookConfigFile != "" {
		// Read once: kube-apiserver does not reload this file either.
		wh, err := webhook.New(webhook.Options{ConfigFile: o.WebhookConfigFile, Version: o.WebhookVersion,
			APIAudiences: ac.APIAudiences, CacheTTL: o.WebhookCacheTTL})
		if err != nil {
			return ac, fmt.Errorf("--authentication-token-webhook-config-file %s: %w", o.WebhookConfigFile, err)
		}
		if ttl, all := o.WebhookCacheTTL, ac.TokenCache.SuccessTTL; ttl > 0 && all > 0 && ttl < all {
			logger.Warn("the webhook cache TTL is shorter than the token cache's TTL for successes", "webhookCacheTTL", ttl, "tokenCacheTTL", all)
		}
		ac.Tokens = append(ac.Tokens, wh)
	}
	return ac, nil
}
