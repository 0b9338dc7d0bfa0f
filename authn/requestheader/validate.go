package requestheader

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kubegate/kubegate/authn/internal/chain"
)

// Warnings returns what kube-apiserver warns about in these options: each
// standard header name that is not configured, because API aggregation
// relies on it.
func (o Options) Warnings() []string {
	var w []string
	for _, c := range []struct {
		field, want string
		have        []string
	}{
		{"UsernameHeaders", UserHeader, o.UsernameHeaders},
		{"UIDHeaders", UIDHeader, o.UIDHeaders},
		{"GroupHeaders", GroupHeader, o.GroupHeaders},
		{"ExtraHeaderPrefixes", ExtraHeaderPrefix, o.ExtraHeaderPrefixes},
	} {
		if !slices.ContainsFunc(c.have, func(h string) bool { return strings.EqualFold(h, c.want) }) {
			w = append(w, fmt.Sprintf("%s does not include %q: API aggregation will not work", c.field, c.want))
		}
	}
	return w
}

// ErrSharedCA is returned by CheckSharedCA.
var ErrSharedCA = errors.New("the front-proxy CA bundle and the client CA bundle share a certificate and no allowed names are set: any client certificate could act as a front proxy")

// CheckSharedCA refuses, as kube-apiserver does at start-up, a front-proxy
// CA bundle that shares a certificate with the client CA bundle when no
// allowed names restrict the proxies: every client would then be able to
// set identity headers.
func CheckSharedCA(frontProxyCAPEM, clientCAPEM []byte, allowedNames []string) error {
	if len(allowedNames) > 0 {
		return nil
	}
	front, err := chain.ParseCerts(frontProxyCAPEM)
	if err != nil {
		return fmt.Errorf("front-proxy CA bundle: %w", err)
	}
	client, err := chain.ParseCerts(clientCAPEM)
	if err != nil {
		return fmt.Errorf("client CA bundle: %w", err)
	}
	for _, f := range front {
		for _, c := range client {
			if bytes.Equal(f.Raw, c.Raw) {
				return fmt.Errorf("%w (%s)", ErrSharedCA, chain.Identify(f))
			}
		}
	}
	return nil
}
