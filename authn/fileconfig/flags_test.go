package fileconfig_test

import (
	"slices"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn/fileconfig"
)

func TestFlagsConfigured(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		set  func(*fileconfig.Flags)
		want bool
	}{
		{"defaults turn nothing on", func(*fileconfig.Flags) {}, false},
		{"client CA", func(f *fileconfig.Flags) { f.ClientCAFile = "ca.crt" }, true},
		{"token file", func(f *fileconfig.Flags) { f.TokenAuthFile = "tokens.csv" }, true},
		{"service-account key", func(f *fileconfig.Flags) { f.SAKeyFiles = []string{"sa.pub"} }, true},
		{"front-proxy CA", func(f *fileconfig.Flags) { f.RequestHeaderCAFile = "front-proxy-ca.crt" }, true},
		{"anonymous", func(f *fileconfig.Flags) { f.AnonymousAuth = true }, true},
		{"issuers alone", func(f *fileconfig.Flags) { f.SAIssuers = []string{"https://issuer"} }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fileconfig.DefaultFlags()
			tc.set(&f)
			if got := f.Configured(); got != tc.want {
				t.Errorf("Configured() = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFlagsOptions(t *testing.T) {
	t.Parallel()
	f := fileconfig.DefaultFlags()
	f.ClientCAFile, f.TokenAuthFile, f.SAKeyFiles = "ca.crt", "tokens.csv", []string{"sa.pub"}
	f.RequestHeaderCAFile, f.RequestHeaderAllowedNames = "front-proxy-ca.crt", []string{"front-proxy-client"}
	f.AnonymousAuth = true
	o := f.Options(3 * time.Second)
	switch {
	case o.ClientCAFile != "ca.crt" || o.TokenAuthFile != "tokens.csv" || !slices.Equal(o.SAKeyFiles, []string{"sa.pub"}):
		t.Errorf("files: got %q %q %q", o.ClientCAFile, o.TokenAuthFile, o.SAKeyFiles)
	case !slices.Equal(o.SAIssuers, []string{fileconfig.DefaultIssuer}):
		t.Errorf("SAIssuers = %q, want the default issuer", o.SAIssuers)
	case o.RequestHeaderCAFile != "front-proxy-ca.crt" || !slices.Equal(o.RequestHeaderAllowedNames, []string{"front-proxy-client"}):
		t.Errorf("request-header CA and names: got %q %q", o.RequestHeaderCAFile, o.RequestHeaderAllowedNames)
	case !slices.Equal(o.RequestHeaderUsernameHeaders, []string{"X-Remote-User"}) || !slices.Equal(o.RequestHeaderGroupHeaders, []string{"X-Remote-Group"}) ||
		!slices.Equal(o.RequestHeaderUIDHeaders, []string{"X-Remote-Uid"}) || !slices.Equal(o.RequestHeaderExtraPrefixes, []string{"X-Remote-Extra-"}):
		t.Errorf("request-header names: got %q %q %q %q", o.RequestHeaderUsernameHeaders, o.RequestHeaderUIDHeaders, o.RequestHeaderGroupHeaders, o.RequestHeaderExtraPrefixes)
	case !o.Anonymous || o.ReloadInterval != 3*time.Second:
		t.Errorf("Anonymous = %v, ReloadInterval = %s; want true, 3s", o.Anonymous, o.ReloadInterval)
	case o.SAGetter != nil || o.SkipLegacyLookup:
		t.Error("the service-account lookup is the caller's to set")
	}
}
