// Package quotaeval holds the ResourceQuota evaluators kube's quota
// counts with (docs/kubernetes-behaviour.md D.14 and G.21): what a pod, a
// service and a persistent volume claim use, as kube's core evaluators
// count it, and object counts under the legacy names for configmaps,
// secrets, replication controllers and quotas (count/RESOURCE.GROUP for
// the rest, made with ObjectCount as they are met).
//
// The API server's ResourceQuota admission plugin charges a write with
// them, and the resource quota controller sums a namespace's usage with
// them; so both count alike. Only the controller lists objects: an
// evaluator built without a list function (admission's) has no
// UsageStats.
package quotaeval

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	kubeadmission "k8s.io/apiserver/pkg/admission"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	resourcehelper "k8s.io/component-helpers/resource"
)

// The resources the named evaluators count.
var (
	Pods                   = schema.GroupResource{Resource: "pods"}
	Services               = schema.GroupResource{Resource: "services"}
	PersistentVolumeClaims = schema.GroupResource{Resource: "persistentvolumeclaims"}
	ConfigMaps             = schema.GroupResource{Resource: "configmaps"}
	Secrets                = schema.GroupResource{Resource: "secrets"}
	ReplicationControllers = schema.GroupResource{Resource: "replicationcontrollers"}
	ResourceQuotas         = schema.GroupResource{Resource: "resourcequotas"}
)

// Ignored are the resources kube's quota never counts: the virtual ones
// and events.
var Ignored = map[schema.GroupResource]bool{
	{Resource: "bindings"}: true, {Resource: "componentstatuses"}: true, {Resource: "events"}: true,
	{Group: "events.k8s.io", Resource: "events"}:                           true,
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}:             true,
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:       true,
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}:      true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}:  true,
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:   true,
}

// aliases are the legacy names of the object counts that have one.
var aliases = map[schema.GroupResource]corev1.ResourceName{
	ConfigMaps: corev1.ResourceConfigMaps, ResourceQuotas: corev1.ResourceQuotas,
	ReplicationControllers: corev1.ResourceReplicationControllers, Secrets: corev1.ResourceSecrets,
}

// Options configure Evaluators.
type Options struct {
	// List lists a resource's objects in a namespace, for UsageStats;
	// nil (admission) means the evaluators have no UsageStats. It is
	// asked once per named resource, and may return nil for one it
	// cannot list, whose evaluator then has no UsageStats.
	List func(schema.GroupResource) generic.ListFuncByNamespace
	// Now is the clock a pod's usage is read at (a pod deleted longer
	// ago than its grace period uses nothing but its count); nil means
	// time.Now.
	Now func() time.Time
}

// Evaluators returns the named evaluators by the resource they count.
func Evaluators(o Options) map[schema.GroupResource]quota.Evaluator {
	list := func(gr schema.GroupResource) generic.ListFuncByNamespace {
		if o.List == nil {
			return nil
		}
		return o.List(gr)
	}
	now := o.Now
	if now == nil {
		now = time.Now
	}
	evs := []quota.Evaluator{podEvaluator(list(Pods), now), serviceEvaluator(list(Services)), claimEvaluator(list(PersistentVolumeClaims))}
	for gr := range aliases {
		evs = append(evs, ObjectCount(gr, list(gr)))
	}
	out := map[schema.GroupResource]quota.Evaluator{}
	for _, e := range evs {
		out[e.GroupResource()] = e
	}
	return out
}

// ObjectCount is the evaluator of a resource counted by its objects
// only, as count/RESOURCE.GROUP (and its legacy name, if it has one);
// list may be nil (no UsageStats).
func ObjectCount(gr schema.GroupResource, list generic.ListFuncByNamespace) quota.Evaluator {
	if list == nil {
		list = func(string) ([]runtime.Object, error) {
			return nil, fmt.Errorf("usage stats of %s are not computed by admission", gr)
		}
	}
	return generic.NewObjectCountEvaluator(gr, list, aliases[gr])
}

// kindEvaluator is a quota.Evaluator made of the functions that differ
// from one kind to another.
type kindEvaluator struct {
	gr schema.GroupResource
	// names are the resources counted; matches, when set, takes other
	// names too (by prefix or suffix).
	names   []corev1.ResourceName
	matches func(corev1.ResourceName) bool
	handles func(a kubeadmission.Attributes) bool
	usage   func(obj runtime.Object) (corev1.ResourceList, error)
	// scope reports whether obj falls in a quota's scope; nil: no scopes.
	scope       func(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error)
	constraints func(required []corev1.ResourceName, obj runtime.Object) error
	// list lists the namespace's objects for UsageStats; nil: none.
	list generic.ListFuncByNamespace
}

var _ quota.Evaluator = (*kindEvaluator)(nil)

func (e *kindEvaluator) GroupResource() schema.GroupResource                   { return e.gr }
func (e *kindEvaluator) Handles(a kubeadmission.Attributes) bool               { return e.handles(a) }
func (e *kindEvaluator) Usage(obj runtime.Object) (corev1.ResourceList, error) { return e.usage(obj) }

func (e *kindEvaluator) Constraints(required []corev1.ResourceName, obj runtime.Object) error {
	if e.constraints == nil {
		return nil
	}
	return e.constraints(required, obj)
}

func (e *kindEvaluator) scopeFunc() generic.MatchesScopeFunc {
	if e.scope == nil {
		return generic.MatchesNoScopeFunc
	}
	return e.scope
}

func (e *kindEvaluator) Matches(q *corev1.ResourceQuota, obj runtime.Object) (bool, error) {
	return generic.Matches(q, obj, e.MatchingResources, e.scopeFunc())
}

func (e *kindEvaluator) MatchingResources(input []corev1.ResourceName) []corev1.ResourceName {
	out := quota.Intersection(input, e.names)
	for _, name := range input {
		if e.matches != nil && !slices.Contains(e.names, name) && e.matches(name) {
			out = append(out, name)
		}
	}
	return out
}

func (e *kindEvaluator) MatchingScopes(obj runtime.Object, sels []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	out := []corev1.ScopedResourceSelectorRequirement{}
	if e.scope == nil {
		return out, nil
	}
	for _, sel := range sels {
		ok, err := e.scope(sel, obj)
		if err != nil {
			return []corev1.ScopedResourceSelectorRequirement{}, fmt.Errorf("error on matching scope %v: %v", sel, err)
		}
		if ok {
			out = append(out, sel)
		}
	}
	return out, nil
}

func (e *kindEvaluator) UncoveredQuotaScopes(limited, matched []corev1.ScopedResourceSelectorRequirement) ([]corev1.ScopedResourceSelectorRequirement, error) {
	out := []corev1.ScopedResourceSelectorRequirement{}
	if e.scope == nil {
		return out, nil
	}
	for _, sel := range limited {
		if !slices.ContainsFunc(matched, func(m corev1.ScopedResourceSelectorRequirement) bool { return m.ScopeName == sel.ScopeName }) {
			out = append(out, sel)
		}
	}
	return out, nil
}

// UsageStats sums the usage of the namespace's objects in the scopes
// asked for; an evaluator without a list function has none.
func (e *kindEvaluator) UsageStats(o quota.UsageStatsOptions) (quota.UsageStats, error) {
	if e.list == nil {
		return quota.UsageStats{}, fmt.Errorf("usage stats of %s are not computed by admission", e.gr)
	}
	return generic.CalculateUsageStats(o, e.list, e.scopeFunc(), e.usage)
}

func one() resource.Quantity { return *resource.NewQuantity(1, resource.DecimalSI) }

// podEvaluator counts a pod that is not finished: pods, count/pods, and
// its requests and limits of cpu, memory, ephemeral storage and huge
// pages. A quota of cpu or memory requires every container to ask for it.
func podEvaluator(list generic.ListFuncByNamespace, now func() time.Time) *kindEvaluator {
	gr := Pods
	return &kindEvaluator{gr: gr, list: list,
		names: []corev1.ResourceName{generic.ObjectCountQuotaResourceNameFor(gr), corev1.ResourceCPU, corev1.ResourceMemory,
			corev1.ResourceEphemeralStorage, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
			corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage, corev1.ResourcePods},
		matches: func(n corev1.ResourceName) bool {
			s := string(n)
			return strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) ||
				strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) && extendedResource(corev1.ResourceName(strings.TrimPrefix(s, corev1.DefaultResourceRequestsPrefix)))
		},
		handles: func(a kubeadmission.Attributes) bool {
			switch a.GetSubresource() {
			case "":
				if a.GetOperation() == kubeadmission.Update {
					p, ok1 := a.GetObject().(*corev1.Pod)
					o, ok2 := a.GetOldObject().(*corev1.Pod)
					if ok1 && ok2 && terminating(p) != terminating(o) {
						return true
					}
				}
				return a.GetOperation() == kubeadmission.Create
			case "resize":
				return a.GetOperation() == kubeadmission.Update
			}
			return false
		},
		usage:       func(obj runtime.Object) (corev1.ResourceList, error) { return podUsage(obj, now()) },
		scope:       podInScope,
		constraints: podConstraints,
	}
}

// Charged reports whether pod's resources count against a quota at now:
// it is not finished, and not deleted longer ago than its grace period.
func Charged(p *corev1.Pod, now time.Time) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	if p.DeletionTimestamp != nil && p.DeletionGracePeriodSeconds != nil &&
		now.After(p.DeletionTimestamp.Add(time.Duration(*p.DeletionGracePeriodSeconds)*time.Second)) {
		return false
	}
	return true
}

func terminating(p *corev1.Pod) bool {
	return p.Spec.ActiveDeadlineSeconds != nil && *p.Spec.ActiveDeadlineSeconds >= 0
}

// bestEffort: the pod's QoS class is BestEffort. With pod-level
// resources the pod's own requests and limits decide it, as for kube's
// QoS; else no container asks for or is limited in cpu or memory.
func bestEffort(p *corev1.Pod) bool {
	if resourcehelper.IsPodLevelResourcesSet(p) {
		return noCPUOrMemory(p.Spec.Resources)
	}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range cs {
			if !noCPUOrMemory(&c.Resources) {
				return false
			}
		}
	}
	return true
}

func noCPUOrMemory(r *corev1.ResourceRequirements) bool {
	for _, l := range []corev1.ResourceList{r.Requests, r.Limits} {
		for name, q := range l {
			if (name == corev1.ResourceCPU || name == corev1.ResourceMemory) && !q.IsZero() {
				return false
			}
		}
	}
	return true
}

// extendedResource is kube's test for a resource a quota counts as
// requests.NAME: an extended resource (a qualified name outside
// kubernetes.io/) or a device class's (deviceclass.resource.kubernetes.io/).
func extendedResource(name corev1.ResourceName) bool {
	s := string(name)
	if strings.HasPrefix(s, resourcev1.ResourceDeviceClassPrefix) {
		return true
	}
	native := !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix)
	if native || strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+s)) == 0
}

// podUsage is what a pod uses at now: its count always, and its
// resources while it is neither finished nor deleted longer ago than its
// grace period (a pod stuck terminating on a lost node charges nothing).
func podUsage(obj runtime.Object, now time.Time) (corev1.ResourceList, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, fmt.Errorf("expect *v1.Pod, got %T", obj)
	}
	out := corev1.ResourceList{generic.ObjectCountQuotaResourceNameFor(Pods): one()}
	if !Charged(p, now) {
		return out, nil
	}
	opts := resourcehelper.PodResourcesOptions{}
	return quota.Add(out, computeUsage(resourcehelper.PodRequests(p, opts), resourcehelper.PodLimits(p, opts))), nil
}

// computeUsage is what requests and limits count for: pods, and each of
// cpu, memory and ephemeral storage under its plain, requests. and limits.
// names; huge pages under theirs.
func computeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: one()}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		if q, ok := requests[r]; ok {
			out[r] = q
			out["requests."+r] = q
		}
		if q, ok := limits[r]; ok {
			out["limits."+r] = q
		}
	}
	for r, q := range requests {
		if strings.HasPrefix(string(r), corev1.ResourceHugePagesPrefix) {
			out[r] = q
			out["requests."+r] = q
		}
		if extendedResource(r) {
			out["requests."+r] = q
		}
	}
	return out
}

func podInScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return false, fmt.Errorf("expect *v1.Pod, got %T", obj)
	}
	switch sel.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return terminating(p), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !terminating(p), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort(p), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort(p), nil
	case corev1.ResourceQuotaScopePriorityClass:
		if sel.Operator == corev1.ScopeSelectorOpExists {
			return p.Spec.PriorityClassName != "", nil
		}
		ls, err := scopeLabelSelector(sel)
		if err != nil {
			return false, err
		}
		var m labels.Set
		if p.Spec.PriorityClassName != "" {
			m = labels.Set{string(corev1.ResourceQuotaScopePriorityClass): p.Spec.PriorityClassName}
		}
		return ls.Matches(m), nil
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(p), nil
	}
	return false, nil
}

// scopeLabelSelector is the label selector of a scope requirement, the
// scope's name as the key.
func scopeLabelSelector(sel corev1.ScopedResourceSelectorRequirement) (labels.Selector, error) {
	ops := map[corev1.ScopeSelectorOperator]selection.Operator{corev1.ScopeSelectorOpIn: selection.In, corev1.ScopeSelectorOpNotIn: selection.NotIn,
		corev1.ScopeSelectorOpExists: selection.Exists, corev1.ScopeSelectorOpDoesNotExist: selection.DoesNotExist}
	op, ok := ops[sel.Operator]
	if !ok {
		return nil, fmt.Errorf("%q is not a valid scope selector operator", sel.Operator)
	}
	r, err := labels.NewRequirement(string(sel.ScopeName), op, sel.Values)
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*r), nil
}

func crossNamespaceAffinity(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t corev1.PodAffinityTerm) bool { return len(t.Namespaces) != 0 || t.NamespaceSelector != nil }
	var terms []corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		for _, w := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, w.PodAffinityTerm)
		}
	}
	return slices.ContainsFunc(terms, cross)
}

// podConstraints: a quota of cpu or memory (requests or limits) requires
// each container to name it, in kube's message.
func podConstraints(required []corev1.ResourceName, obj runtime.Object) error {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return fmt.Errorf("expect *v1.Pod, got %T", obj)
	}
	if resourcehelper.IsPodLevelResourcesSet(p) {
		return nil // the pod's own resources stand for its containers'
	}
	enforced := sets.New(corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory).Intersection(sets.New(required...))
	missing := map[corev1.ResourceName]sets.Set[string]{}
	for _, cs := range [][]corev1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for _, c := range cs {
			has := sets.KeySet(computeUsage(c.Resources.Requests, c.Resources.Limits))
			for r := range enforced.Difference(has) {
				if missing[r] == nil {
					missing[r] = sets.New[string]()
				}
				missing[r].Insert(c.Name)
			}
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var msgs []string
	for _, r := range sets.List(sets.KeySet(missing)) {
		msgs = append(msgs, fmt.Sprintf("%s for: %s", r, strings.Join(sets.List(missing[r]), ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(msgs, "; "))
}

// serviceEvaluator counts a service: services, count/services, its node
// ports and load balancers.
func serviceEvaluator(list generic.ListFuncByNamespace) *kindEvaluator {
	gr := Services
	return &kindEvaluator{gr: gr, list: list,
		names: []corev1.ResourceName{generic.ObjectCountQuotaResourceNameFor(gr), corev1.ResourceServices,
			corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers},
		handles: func(a kubeadmission.Attributes) bool {
			return a.GetSubresource() == "" && (a.GetOperation() == kubeadmission.Create || a.GetOperation() == kubeadmission.Update)
		},
		usage: func(obj runtime.Object) (corev1.ResourceList, error) {
			svc, ok := obj.(*corev1.Service)
			if !ok {
				return nil, fmt.Errorf("expect *v1.Service, got %T", obj)
			}
			out := corev1.ResourceList{generic.ObjectCountQuotaResourceNameFor(gr): one(), corev1.ResourceServices: one(),
				corev1.ResourceServicesLoadBalancers: {Format: resource.DecimalSI}, corev1.ResourceServicesNodePorts: {Format: resource.DecimalSI}}
			ports := int64(len(svc.Spec.Ports))
			switch svc.Spec.Type {
			case corev1.ServiceTypeNodePort:
				out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
			case corev1.ServiceTypeLoadBalancer:
				if a := svc.Spec.AllocateLoadBalancerNodePorts; a != nil && !*a {
					ports = 0
					for _, p := range svc.Spec.Ports {
						if p.NodePort != 0 {
							ports++
						}
					}
				}
				out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
				out[corev1.ResourceServicesLoadBalancers] = one()
			}
			return out, nil
		},
	}
}

// storageClassSuffix names a claim resource of one storage class.
const storageClassSuffix = ".storageclass.storage.k8s.io/"

// claimEvaluator counts a persistent volume claim: persistentvolumeclaims,
// count/persistentvolumeclaims, requests.storage, and both per storage
// class.
func claimEvaluator(list generic.ListFuncByNamespace) *kindEvaluator {
	gr := PersistentVolumeClaims
	return &kindEvaluator{gr: gr, list: list,
		names: []corev1.ResourceName{generic.ObjectCountQuotaResourceNameFor(gr), corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage},
		matches: func(n corev1.ResourceName) bool {
			return strings.HasSuffix(string(n), storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims)) ||
				strings.HasSuffix(string(n), storageClassSuffix+string(corev1.ResourceRequestsStorage))
		},
		handles: func(a kubeadmission.Attributes) bool {
			return a.GetSubresource() == "" && (a.GetOperation() == kubeadmission.Create || a.GetOperation() == kubeadmission.Update)
		},
		scope: claimInScope,
		usage: func(obj runtime.Object) (corev1.ResourceList, error) {
			pvc, ok := obj.(*corev1.PersistentVolumeClaim)
			if !ok {
				return nil, fmt.Errorf("expect *v1.PersistentVolumeClaim, got %T", obj)
			}
			out := corev1.ResourceList{generic.ObjectCountQuotaResourceNameFor(gr): one(), corev1.ResourcePersistentVolumeClaims: one()}
			class := ""
			if pvc.Spec.StorageClassName != nil {
				class = *pvc.Spec.StorageClassName
			} else if c, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
				class = c
			}
			if class != "" {
				out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = one()
			}
			if req, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
				q := req.DeepCopy()
				q.RoundUp(0)
				out[corev1.ResourceRequestsStorage] = q
				if class != "" {
					out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourceRequestsStorage))] = q
				}
			}
			return out, nil
		},
	}
}

// claimInScope matches a claim to a quota's VolumeAttributesClass scope
// by every class it names: in its spec, its status, and the class it is
// being modified to.
func claimInScope(sel corev1.ScopedResourceSelectorRequirement, obj runtime.Object) (bool, error) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return false, fmt.Errorf("expect *v1.PersistentVolumeClaim, got %T", obj)
	}
	if sel.ScopeName != corev1.ResourceQuotaScopeVolumeAttributesClass {
		return false, nil
	}
	names := sets.New[string]()
	for _, n := range []*string{pvc.Spec.VolumeAttributesClassName, pvc.Status.CurrentVolumeAttributesClassName} {
		if n != nil && *n != "" {
			names.Insert(*n)
		}
	}
	if m := pvc.Status.ModifyVolumeStatus; m != nil && m.TargetVolumeAttributesClassName != "" {
		names.Insert(m.TargetVolumeAttributesClassName)
	}
	if sel.Operator == corev1.ScopeSelectorOpExists {
		return names.Len() != 0, nil
	}
	ls, err := scopeLabelSelector(sel)
	if err != nil {
		return false, err
	}
	if names.Len() == 0 {
		return ls.Matches(labels.Set{}), nil
	}
	for n := range names {
		if ls.Matches(labels.Set{string(corev1.ResourceQuotaScopeVolumeAttributesClass): n}) {
			return true, nil
		}
	}
	return false, nil
}
