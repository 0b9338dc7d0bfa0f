package fileconfig_test

import (
	"testing"

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
		{"bootstrap tokens", func(f *fileconfig.Flags) { f.EnableBootstrapTokenAuth = true }, true},
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
