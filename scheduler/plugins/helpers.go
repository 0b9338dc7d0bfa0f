package plugins

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
)

// tolerates reports whether one of tolerations tolerates taint, by
// component-helpers' rule, the one kube-scheduler applies. The Lt and Gt
// operators, behind a feature gate that is off by default in
// kube-scheduler, tolerate nothing.
func tolerates(tolerations []v1.Toleration, taint *v1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(klog.Background(), tolerations, taint, false)
}

// nodeSelector is a compiled v1.NodeSelector: its terms are ORed, each
// term's requirements ANDed. A term that is empty or does not parse matches
// no node, as in kube-scheduler.
type nodeSelector []nodeSelectorTerm

type nodeSelectorTerm struct {
	labels labels.Selector
	// names constrains metadata.name: the node's name must (in) or must
	// not (!in) be among values.
	names []fieldRequirement
	// weight is set for preferred terms.
	weight int32
}

type fieldRequirement struct {
	in     bool
	values []string
}

var nodeOps = map[v1.NodeSelectorOperator]selection.Operator{
	v1.NodeSelectorOpIn:           selection.In,
	v1.NodeSelectorOpNotIn:        selection.NotIn,
	v1.NodeSelectorOpExists:       selection.Exists,
	v1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	v1.NodeSelectorOpGt:           selection.GreaterThan,
	v1.NodeSelectorOpLt:           selection.LessThan,
}

// compileTerm returns the compiled term and whether it can match anything.
func compileTerm(t *v1.NodeSelectorTerm) (nodeSelectorTerm, bool) {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return nodeSelectorTerm{}, false
	}
	out := nodeSelectorTerm{labels: labels.NewSelector()}
	for _, e := range t.MatchExpressions {
		op, ok := nodeOps[e.Operator]
		if !ok {
			return nodeSelectorTerm{}, false
		}
		r, err := labels.NewRequirement(e.Key, op, e.Values)
		if err != nil {
			return nodeSelectorTerm{}, false
		}
		out.labels = out.labels.Add(*r)
	}
	for _, e := range t.MatchFields {
		if e.Key != "metadata.name" || len(e.Values) != 1 ||
			(e.Operator != v1.NodeSelectorOpIn && e.Operator != v1.NodeSelectorOpNotIn) {
			return nodeSelectorTerm{}, false
		}
		out.names = append(out.names, fieldRequirement{in: e.Operator == v1.NodeSelectorOpIn, values: e.Values})
	}
	return out, true
}

func (t *nodeSelectorTerm) matches(node *v1.Node) bool {
	for _, f := range t.names {
		found := false
		for _, v := range f.values {
			found = found || v == node.Name
		}
		if found != f.in {
			return false
		}
	}
	return t.labels.Matches(labels.Set(node.Labels))
}

func compileNodeSelector(ns *v1.NodeSelector) nodeSelector {
	out := make(nodeSelector, 0, len(ns.NodeSelectorTerms))
	for i := range ns.NodeSelectorTerms {
		if t, ok := compileTerm(&ns.NodeSelectorTerms[i]); ok {
			out = append(out, t)
		}
	}
	return out
}

func (s nodeSelector) matches(node *v1.Node) bool {
	for i := range s {
		if s[i].matches(node) {
			return true
		}
	}
	return false
}

// requiredNodeAffinity is the pod's spec.nodeSelector and required node
// affinity; nil matches every node.
type requiredNodeAffinity struct {
	selector labels.Selector
	// affinity is nil when the pod has no required node affinity.
	affinity nodeSelector
	hasTerms bool
}

func newRequiredNodeAffinity(pod *v1.Pod) *requiredNodeAffinity {
	var r requiredNodeAffinity
	if len(pod.Spec.NodeSelector) > 0 {
		r.selector = labels.SelectorFromSet(pod.Spec.NodeSelector)
	}
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		r.affinity = compileNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
		r.hasTerms = true
	}
	if r.selector == nil && !r.hasTerms {
		return nil
	}
	return &r
}

func (r *requiredNodeAffinity) matches(node *v1.Node) bool {
	if r == nil {
		return true
	}
	if r.selector != nil && !r.selector.Matches(labels.Set(node.Labels)) {
		return false
	}
	return !r.hasTerms || r.affinity.matches(node)
}
