package core_test

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/registry/core"
)

func resources(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = apiresource.MustParse(kv[i+1])
	}
	return l
}

// The messages are kube-apiserver v1.37.2's ValidateLimitRange's.
func TestLimitRangeValidation_D8(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		items []corev1.LimitRangeItem
		want  []string
	}{
		{"valid", []corev1.LimitRangeItem{
			{Type: corev1.LimitTypeContainer, Min: resources("cpu", "100m"), Max: resources("cpu", "1"), Default: resources("cpu", "500m")},
			{Type: corev1.LimitTypePod, Max: resources("memory", "1Gi")},
			{Type: corev1.LimitTypePersistentVolumeClaim, Max: resources("storage", "10Gi")},
		}, nil},
		{"a type twice", []corev1.LimitRangeItem{{Type: corev1.LimitTypePod}, {Type: corev1.LimitTypePod}},
			[]string{`spec.limits[1].type: Duplicate value: "Pod"`}},
		{"unknown type", []corev1.LimitRangeItem{{Type: "Widget"}},
			[]string{`spec.limits[0].type: Invalid value: "Widget": must be a standard limit type or fully qualified`}},
		{"defaults on Pod", []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, Default: resources("cpu", "1"), DefaultRequest: resources("cpu", "1")}},
			[]string{"spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'",
				"spec.limits[0].defaultRequest: Forbidden: may not be specified when `type` is 'Pod'"}},
		{"no storage bound on a claim", []corev1.LimitRangeItem{{Type: corev1.LimitTypePersistentVolumeClaim}},
			[]string{"spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but neither was provided"}},
		{"not a container resource", []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, Max: resources("pods", "1")}},
			[]string{`spec.limits[0].max[pods]: Invalid value: "pods": must be a standard resource for containers`}},
		{"min above max", []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, Min: resources("memory", "2Gi"), Max: resources("memory", "1Gi")}},
			[]string{`spec.limits[0].min[memory]: Invalid value: "2Gi": min value 2Gi is greater than max value 1Gi`}},
		{"default above max names max", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: resources("cpu", "1"),
			Default: resources("cpu", "2"), DefaultRequest: resources("cpu", "1")}},
			[]string{`spec.limits[0].default[cpu]: Invalid value: "1": default value 2 is greater than max value 1`}},
		{"default request above default", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default: resources("cpu", "1"), DefaultRequest: resources("cpu", "2")}},
			[]string{`spec.limits[0].defaultRequest[cpu]: Invalid value: "2": default request value 2 is greater than default limit value 1`}},
		{"ratio below 1 and above max/min", []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, Min: resources("cpu", "1"), Max: resources("cpu", "2"),
			MaxLimitRequestRatio: resources("cpu", "3")}, {Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: resources("cpu", "500m")}},
			[]string{`spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "3": ratio 3 is greater than max/min = 2.000000`,
				`spec.limits[1].maxLimitRequestRatio[cpu]: Invalid value: "500m": ratio 500m is less than 1`}},
		{"hugepages cannot overcommit", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Default: resources("hugepages-2Mi", "4Mi"), DefaultRequest: resources("hugepages-2Mi", "2Mi")}},
			[]string{`spec.limits[0].defaultRequest[hugepages-2Mi]: Invalid value: "2Mi": default value 4Mi must equal to defaultRequest value 2Mi in hugepages-2Mi`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "lr"}, Spec: corev1.LimitRangeSpec{Limits: tt.items}}
			core.DefaultLimitRange(lr)
			var got []string
			for _, e := range core.ValidateLimitRange(lr, nil) {
				got = append(got, e.Error())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// A Container item's defaults follow kube's decoding: the default limit
// from max, the default request from the default limit, else from min.
func TestLimitRangeDefaults_D8(t *testing.T) {
	t.Parallel()
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Max: resources("cpu", "2"), Min: resources("memory", "64Mi"), Default: resources("ephemeral-storage", "1Gi")},
		{Type: corev1.LimitTypePod, Max: resources("cpu", "4")},
	}}}
	core.DefaultLimitRange(lr)
	c := lr.Spec.Limits[0]
	if want := resources("cpu", "2", "ephemeral-storage", "1Gi"); !reflect.DeepEqual(c.Default, want) {
		t.Errorf("default: got %v, want %v", c.Default, want)
	}
	if want := resources("cpu", "2", "ephemeral-storage", "1Gi", "memory", "64Mi"); !reflect.DeepEqual(c.DefaultRequest, want) {
		t.Errorf("defaultRequest: got %v, want %v", c.DefaultRequest, want)
	}
	if p := lr.Spec.Limits[1]; p.Default != nil || p.DefaultRequest != nil {
		t.Errorf("Pod item: got defaults %v %v, want none", p.Default, p.DefaultRequest)
	}
	core.PrepareLimitRange(lr, nil)
	if len(lr.Name) != 36 {
		t.Errorf("a limit range without a name: got name %q, want a UUID", lr.Name)
	}
}
