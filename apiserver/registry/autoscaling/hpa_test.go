package autoscaling_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

const (
	v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
	v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
)

func hpa(version, name, spec string) string {
	return `{"apiVersion":"autoscaling/` + version + `","kind":"HorizontalPodAutoscaler","metadata":{"name":"` + name +
		`"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},` + spec + `}}`
}

// An autoscaler written in v2 reads in v1 with what v1 cannot hold in
// annotations, and one written in v1 reads in v2 with its defaults
// (D.15).
func TestHPAVersions_D15(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	rt.Create(t, srv, [2]string{v2, hpa("v2", "two", `"maxReplicas":5,"metrics":[`+
		`{"type":"Pods","pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue","averageValue":"10"}}},`+
		`{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":60}}}]`)})
	code, body := rt.Do(t, srv, "GET", v1+"/two", "", nil)
	obj := rt.Object(t, body)
	spec := obj["spec"].(map[string]any)
	annotations := obj["metadata"].(map[string]any)["annotations"].(map[string]any)
	if code != 200 || spec["targetCPUUtilizationPercentage"] != float64(60) || spec["minReplicas"] != float64(1) ||
		annotations["autoscaling.alpha.kubernetes.io/metrics"] != `[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]` {
		t.Errorf("v2 object read in v1: %d %s", code, body)
	}

	rt.Create(t, srv, [2]string{v1, hpa("v1", "one", `"maxReplicas":3`)})
	code, body = rt.Do(t, srv, "GET", v2+"/one", "", nil)
	if code != 200 || !strings.Contains(string(body), `"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":80}}}]`) ||
		strings.Contains(string(body), "autoscaling.alpha.kubernetes.io") {
		t.Errorf("v1 object read in v2: %d %s", code, body)
	}
	rows := rt.Rows(t, srv, v2)
	if len(rows) != 2 || !strings.Contains(rows[1], `"Deployment/web","qps: \u003cunknown\u003e`) && !strings.Contains(rows[1], `"\u003cunknown\u003e/10, cpu: \u003cunknown\u003e/60%"`) {
		t.Errorf("rows: %q", rows)
	}
}

// Invalid autoscalers get kube's errors, the replica bounds last (D.15).
func TestHPAValidation_D15(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	code, body := rt.Do(t, srv, "POST", v2, hpa("v2", "bad", `"minReplicas":-1,"maxReplicas":0,"behavior":{"scaleUp":{"policies":[{"type":"Seconds","value":1,"periodSeconds":2000}]}}`), nil)
	rt.WantInvalid(t, code, body, "HorizontalPodAutoscaler.autoscaling", "bad",
		rt.Cause(metav1.CauseTypeFieldValueNotSupported, "spec.behavior.scaleUp.policies[0].type", `Unsupported value: "Seconds": supported values: "Percent", "Pods"`),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.behavior.scaleUp.policies[0].periodSeconds", "Invalid value: 2000: must be less than or equal to 1800"),
		rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec.minReplicas", "Invalid value: -1: must be greater than or equal to 0"),
		rt.Cause(metav1.CauseTypeFieldValueRequired, "spec.maxReplicas", "Required value"))
}
