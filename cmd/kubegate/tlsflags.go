package main

import (
	"github.com/kubegate/kubegate/internal/serving"
	"github.com/spf13/pflag"
)

// addTLSFlags registers the serving TLS flags every serving command takes,
// named as kube-apiserver names them.
func addTLSFlags(fs *pflag.FlagSet, f *serving.TLSFlags) {
	fs.StringSliceVar(&f.CipherSuites, "tls-cipher-suites", nil,
		"TLS 1.2 cipher suites, IANA names, comma-separated (TLS 1.3 suites are fixed); default ECDHE with AES-GCM or ChaCha20-Poly1305 only")
	fs.StringVar(&f.MinVersion, "tls-min-version", "", "lowest TLS version accepted: VersionTLS12 (default) or VersionTLS13")
}
