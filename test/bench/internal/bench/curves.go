// Package bench holds what the gateway benchmark's programs share and what
// their tests drive in-process: the upstream backend, the plain Go reverse
// proxy baseline, and the TLS settings they accept on the command line.
package bench

import (
	"crypto/tls"
	"fmt"
	"strings"
)

var byName = map[string]tls.CurveID{
	"X25519":         tls.X25519,
	"P256":           tls.CurveP256,
	"P384":           tls.CurveP384,
	"P521":           tls.CurveP521,
	"X25519MLKEM768": tls.X25519MLKEM768,
}

// ParseCurves turns a comma-separated list such as "X25519,P256" into curve IDs,
// in order. The empty string returns nil, which means Go's defaults.
func ParseCurves(list string) ([]tls.CurveID, error) {
	if list == "" {
		return nil, nil
	}
	var ids []tls.CurveID
	for _, name := range strings.Split(list, ",") {
		id, ok := byName[strings.TrimSpace(name)]
		if !ok {
			return nil, fmt.Errorf("unknown key exchange group %q (want X25519, P256, P384, P521 or X25519MLKEM768)", name)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
