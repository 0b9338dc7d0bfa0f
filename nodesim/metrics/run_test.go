package metrics

import (
	"net/netip"
	"testing"

	"github.com/kubegate/kubegate/apiserver"
)

// The metrics server listens only on an address the API server lets an
// EndpointSlice name (I.4).
func TestEndpointAddressIsWhatTheAPIServerAccepts_I4(t *testing.T) {
	for _, s := range []string{"10.1.2.3", "192.168.0.1", "8.8.8.8", "127.0.0.1", "127.9.9.9", "0.0.0.0", "169.254.1.1",
		"224.0.0.5", "239.1.1.1", "::1", "::", "fe80::1", "ff02::1", "2001:db8::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1"} {
		a := netip.MustParseAddr(s)
		want := len(apiserver.NonSpecialIP(nil, s)) == 0
		if got := endpointAddress(a); got != want {
			t.Errorf("%s: endpointAddress %v, the API server accepts it: %v", s, got, want)
		}
	}
}
