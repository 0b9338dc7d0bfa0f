package events_test

import (
	"fmt"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// The answers these tests expect are kube-apiserver v1.37.2's (D.5).

func TestEventsV1EventUpdateValidation_D5(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	const path = "/apis/events.k8s.io/v1/namespaces/default/events"
	ev := `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"ev1"},"eventTime":"2024-01-01T00:00:00.000000Z","type":"Normal","reason":"%s","action":"%s","reportingController":"c","reportingInstance":"i","regarding":{"kind":"Pod","name":"p","namespace":"default"}}`
	if code, body := rt.Do(t, srv, "POST", path, fmt.Sprintf(ev, "R", "A"), nil); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	code, body := rt.Do(t, srv, "PUT", path+"/ev1", fmt.Sprintf(ev, "R2", "A2"), nil)
	rt.WantInvalid(t, code, body, "Event", "ev1",
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "reason", `Invalid value: "R2": field is immutable`),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "action", `Invalid value: "A2": field is immutable`))
}
