package gateway

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/kubegate/kubegate/internal/testpki"
)

func TestMadeUpMethodsAddNoSeries(t *testing.T) { forEachProtocol(t, testMadeUpMethodsAddNoSeries) }

// testMadeUpMethodsAddNoSeries sends requests with hundreds of invented
// methods, unauthenticated and authenticated, and checks that the
// request counter holds only the fixed verbs.
func testMadeUpMethodsAddNoSeries(t *testing.T, proto string) {
	e := newEnv(t, envOptions{proto: proto})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	anon, authed := e.client(nil), e.client(alice)
	const n = 200
	for i := range n {
		m := fmt.Sprintf("MADEUP%d", i)
		e.do(t, anon, m, "/api/v1/pods", nil)
		e.do(t, authed, m, "/api/v1/pods", nil)
	}
	e.do(t, authed, http.MethodGet, "/api/v1/pods", nil)

	families, err := e.gateway.cfg.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true,
		"DELETE": true, "OPTIONS": true, "CONNECT": true, "TRACE": true, "other": true}
	series := 0
	for _, f := range families {
		if f.GetName() != "kubegate_gateway_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				if l.GetName() == "verb" && !allowed[l.GetValue()] {
					t.Errorf("series with verb=%q, want only standard methods and \"other\"", l.GetValue())
				}
			}
		}
	}
	if series == 0 || series > 10 {
		t.Errorf("kubegate_gateway_requests_total has %d series after %d made-up methods, want between 1 and 10", series, n)
	}
}
