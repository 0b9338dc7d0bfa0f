package serving

import "testing"

func TestTLSFlagsValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		f    TLSFlags
		want string
	}{
		{"defaults", TLSFlags{}, ""},
		{"IANA names", TLSFlags{CipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_128_CBC_SHA"}, MinVersion: "VersionTLS12"}, ""},
		{"OpenSSL name", TLSFlags{CipherSuites: []string{"ECDHE-RSA-AES128-GCM-SHA256"}},
			`--tls-cipher-suites: cipher suite "ECDHE-RSA-AES128-GCM-SHA256" is not supported; use IANA names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`},
		{"old version", TLSFlags{MinVersion: "VersionTLS11"}, `--tls-min-version: TLS version "VersionTLS11" is not one of VersionTLS12, VersionTLS13`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.f.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Validate() = %q, want %q", got, tt.want)
			}
		})
	}
}
