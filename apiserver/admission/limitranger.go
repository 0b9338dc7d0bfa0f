package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/kubegate/kubegate/apiserver"
)

// limitRangerAnnotation records on a pod which resources LimitRanger set.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// LimitRanger is kube-apiserver's LimitRanger plugin (D.8), reading the
// namespace's LimitRanges from the server's cache (apiserver.Lister):
//   - Admit gives each container of a new pod what it leaves out of its
//     namespace's Container defaults (default → limits, defaultRequest →
//     requests), and annotates the pod with what it set;
//   - Validate refuses, with 403, a new pod whose containers or whole pod
//     fall outside a LimitRange's min, max or maxLimitRequestRatio.
//
// Pod updates pass untouched, as in kube, but for pods/resize, the one
// update that changes a container's resources: a resize is defaulted and
// checked as a new pod is, unless the pod is being deleted. Without a
// Lister it sees no LimitRanges.
func LimitRanger() apiserver.Admission { return &limitRanger{} }

type limitRanger struct{ lister apiserver.Lister }

var (
	_ apiserver.AdmissionValidator = (*limitRanger)(nil)
	_ apiserver.WantsLister        = (*limitRanger)(nil)
)

func (l *limitRanger) SetLister(li apiserver.Lister) { l.lister = li }

// limitRanges returns the namespace's LimitRanges when a is a pod create
// or a resize of a pod not being deleted.
func (l *limitRanger) limitRanges(a *apiserver.AdmissionAttributes) (*corev1.Pod, []*corev1.LimitRange) {
	create := a.Operation == apiserver.Create && a.Subresource == ""
	resize := a.Operation == apiserver.Update && a.Subresource == "resize"
	if !create && !resize || a.Resource != podsGVR || l.lister == nil {
		return nil, nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if old, ok := a.OldObject.(*corev1.Pod); resize && (!ok || old.DeletionTimestamp != nil) {
		return nil, nil
	}
	return pod, l.lister.LimitRanges(a.Namespace)
}

// Admit sets the defaults of each LimitRange, in order of name; the
// annotation tells what the last one that set anything set.
func (l *limitRanger) Admit(_ context.Context, a *apiserver.AdmissionAttributes) error {
	pod, lrs := l.limitRanges(a)
	for _, lr := range lrs {
		var limits, requests corev1.ResourceList
		for _, item := range lr.Spec.Limits {
			if item.Type == corev1.LimitTypeContainer {
				limits, requests = item.Default, item.DefaultRequest
			}
		}
		var set []string
		for i := range pod.Spec.Containers {
			set = defaultResources(&pod.Spec.Containers[i], "container", limits, requests, set)
		}
		for i := range pod.Spec.InitContainers {
			set = defaultResources(&pod.Spec.InitContainers[i], "init container", limits, requests, set)
		}
		if len(set) > 0 {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[limitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(set, "; ")
		}
	}
	return nil
}

// defaultResources fills what c leaves out of limits and requests, and
// appends kube's note of it to set: "cpu, memory request for container
// app", then the limits.
func defaultResources(c *corev1.Container, what string, limits, requests corev1.ResourceList, set []string) []string {
	fill := func(to *corev1.ResourceList, from corev1.ResourceList) []string {
		var names []string
		for name, q := range from {
			if _, ok := (*to)[name]; ok {
				continue
			}
			if *to == nil {
				*to = corev1.ResourceList{}
			}
			(*to)[name] = q.DeepCopy()
			names = append(names, string(name))
		}
		slices.Sort(names)
		return names
	}
	if names := fill(&c.Resources.Requests, requests); len(names) > 0 {
		set = append(set, fmt.Sprintf("%s request for %s %s", strings.Join(names, ", "), what, c.Name))
	}
	if names := fill(&c.Resources.Limits, limits); len(names) > 0 {
		set = append(set, fmt.Sprintf("%s limit for %s %s", strings.Join(names, ", "), what, c.Name))
	}
	return set
}

// Validate checks the pod against each LimitRange in order of name and
// refuses it with the first one's violations, as kube words them. kube
// walks each item's resources in no fixed order; kubegate walks them
// sorted by name.
func (l *limitRanger) Validate(_ context.Context, a *apiserver.AdmissionAttributes) error {
	pod, lrs := l.limitRanges(a)
	for _, lr := range lrs {
		if err := checkPodLimits(lr, pod); err != nil {
			return forbidden(a, err)
		}
	}
	return nil
}

func checkPodLimits(lr *corev1.LimitRange, pod *corev1.Pod) error {
	var errs []error
	check := func(kind corev1.LimitType, item *corev1.LimitRangeItem, requests, limits corev1.ResourceList) {
		for _, name := range sortedNames(item.Min) {
			errs = appendErr(errs, minConstraint(kind, name, item.Min[name], requests, limits))
		}
		for _, name := range sortedNames(item.Max) {
			errs = appendErr(errs, maxConstraint(kind, name, item.Max[name], requests, limits))
		}
		for _, name := range sortedNames(item.MaxLimitRequestRatio) {
			errs = appendErr(errs, ratioConstraint(kind, name, item.MaxLimitRequestRatio[name], requests, limits))
		}
	}
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		switch item.Type {
		case corev1.LimitTypeContainer:
			for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
				for j := range cs {
					check(item.Type, item, cs[j].Resources.Requests, cs[j].Resources.Limits)
				}
			}
		case corev1.LimitTypePod:
			check(item.Type, item, podTotal(pod, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Requests }),
				podTotal(pod, func(r corev1.ResourceRequirements) corev1.ResourceList { return r.Limits }))
		}
	}
	return utilerrors.NewAggregate(errs)
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		return append(errs, err)
	}
	return errs
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// compared returns the three quantities as kube compares them: in
// thousandths when none is too large for that, else in units.
func compared(observed, other, enforced resource.Quantity) (int64, int64, int64) {
	a, b, e := observed.Value(), other.Value(), enforced.Value()
	if a <= resource.MaxMilliValue && b <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		return observed.MilliValue(), other.MilliValue(), enforced.MilliValue()
	}
	return a, b, e
}

func minConstraint(kind corev1.LimitType, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, e := compared(req, lim, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, kind, enforced.String())
	case r < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	case hasLim && l < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, kind, enforced.String(), lim.String())
	}
	return nil
}

func maxConstraint(kind corev1.LimitType, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, e := compared(req, lim, enforced)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, kind, enforced.String())
	case l > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, kind, enforced.String(), lim.String())
	case hasReq && r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	}
	return nil
}

func ratioConstraint(kind corev1.LimitType, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, _ := compared(req, lim, enforced)
	if !hasReq || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, enforced.String())
	}
	if !hasLim || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, kind, enforced.String())
	}
	ratio := float64(l) / float64(r)
	observed, bound := ratio, float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed, bound = ratio*1000, float64(enforced.MilliValue())
	}
	if observed > bound {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, enforced.String(), ratio)
	}
	return nil
}

// podTotal is what the whole pod requests or limits, as kube counts it
// for a Pod item: the containers' sum, raised to what any init container
// needs while it runs (with the sidecars started before it), sidecars
// counted with the containers; the pod-level resources of cpu and memory
// replace the sum when set.
func podTotal(pod *corev1.Pod, of func(corev1.ResourceRequirements) corev1.ResourceList) corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, c := range pod.Spec.Containers {
		addResources(total, of(c.Resources))
	}
	sidecars, initMax := corev1.ResourceList{}, corev1.ResourceList{}
	for _, c := range pod.Spec.InitContainers {
		need := of(c.Resources)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addResources(total, need)
			addResources(sidecars, need)
			need = sidecars
		} else {
			sum := corev1.ResourceList{}
			addResources(sum, need)
			addResources(sum, sidecars)
			need = sum
		}
		maxResources(initMax, need)
	}
	maxResources(total, initMax)
	if pod.Spec.Resources != nil {
		for name, q := range of(*pod.Spec.Resources) {
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
				total[name] = q
			}
		}
	}
	return total
}

func addResources(to, from corev1.ResourceList) {
	for name, q := range from {
		if have, ok := to[name]; ok {
			have.Add(q)
			to[name] = have
		} else {
			to[name] = q.DeepCopy()
		}
	}
}

func maxResources(to, from corev1.ResourceList) {
	for name, q := range from {
		if have, ok := to[name]; !ok || q.Cmp(have) > 0 {
			to[name] = q.DeepCopy()
		}
	}
}
