package daemonset

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// G.4: which nodes a DaemonSet's pods should run on, and stay on: the
// template's node name, its node selector and required node affinity
// (component-helpers' RequiredNodeAffinity), and the NoSchedule and
// NoExecute taints against its tolerations and the daemon pods' own
// (component-helpers' FindMatchingUntoleratedTaint), as kube's
// controller decides.
func TestFitCheck_G4(t *testing.T) {
	t.Parallel()
	taint := func(key string, effect corev1.TaintEffect) corev1.Taint {
		return corev1.Taint{Key: key, Value: "x", Effect: effect}
	}
	required := func(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
		return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms}}}
	}
	zoneIn := func(op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorTerm {
		return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: op, Values: values}}}
	}
	for _, tc := range []struct {
		name                  string
		spec                  corev1.PodSpec
		taints                []corev1.Taint
		wantRun, wantContinue bool
	}{
		{"plain node", corev1.PodSpec{}, nil, true, true},
		{"node name is the node", corev1.PodSpec{NodeName: "n1"}, nil, true, true},
		{"node name is another", corev1.PodSpec{NodeName: "n2"}, nil, false, false},
		{"node selector matches", corev1.PodSpec{NodeSelector: map[string]string{"zone": "a"}}, nil, true, true},
		{"node selector does not", corev1.PodSpec{NodeSelector: map[string]string{"zone": "b"}}, nil, false, false},
		{"required term matches", corev1.PodSpec{Affinity: required(zoneIn(corev1.NodeSelectorOpIn, "a"))}, nil, true, true},
		{"required terms ORed", corev1.PodSpec{Affinity: required(zoneIn(corev1.NodeSelectorOpIn, "b"), zoneIn(corev1.NodeSelectorOpExists))}, nil, true, true},
		{"selector and terms ANDed", corev1.PodSpec{NodeSelector: map[string]string{"zone": "b"}, Affinity: required(zoneIn(corev1.NodeSelectorOpExists))}, nil, false, false},
		{"bad term matches nothing", corev1.PodSpec{Affinity: required(zoneIn("Matches", "a"))}, nil, false, false},
		{"untolerated NoSchedule: no new pod, the old stays", corev1.PodSpec{}, []corev1.Taint{taint("dedicated", corev1.TaintEffectNoSchedule)}, false, true},
		{"untolerated NoExecute: no pod", corev1.PodSpec{}, []corev1.Taint{taint("dedicated", corev1.TaintEffectNoExecute)}, false, false},
		{"PreferNoSchedule ignored", corev1.PodSpec{}, []corev1.Taint{taint("dedicated", corev1.TaintEffectPreferNoSchedule)}, true, true},
		{"template toleration", corev1.PodSpec{Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}},
			[]corev1.Taint{taint("dedicated", corev1.TaintEffectNoExecute), taint("dedicated", corev1.TaintEffectNoSchedule)}, true, true},
		{"daemon tolerations: not-ready NoExecute and unschedulable", corev1.PodSpec{},
			[]corev1.Taint{taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute), taint(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)}, true, true},
		{"not-ready NoSchedule is not a daemon toleration", corev1.PodSpec{}, []corev1.Taint{taint(corev1.TaintNodeNotReady, corev1.TaintEffectNoSchedule)}, false, true},
		{"network-unavailable only on the host's network", corev1.PodSpec{}, []corev1.Taint{taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)}, false, true},
		{"network-unavailable on the host's network", corev1.PodSpec{HostNetwork: true}, []corev1.Taint{taint(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := &appsv1.DaemonSet{Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{Spec: tc.spec}}}
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}},
				Spec: corev1.NodeSpec{Taints: tc.taints}}
			run, cont := newFit(ds).check(node)
			if run != tc.wantRun || cont != tc.wantContinue {
				t.Errorf("shouldRun, shouldContinue = %v, %v; want %v, %v", run, cont, tc.wantRun, tc.wantContinue)
			}
		})
	}
}
