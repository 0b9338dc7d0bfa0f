package core

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubegate/kubegate/apiserver"
)

// workloadResources are the core kinds that run or bound pods: pods, with
// the legacy bindings, replication controllers and limit ranges.
func workloadResources() []*apiserver.Resource {
	return []*apiserver.Resource{podResource(), replicationControllerResource(), limitRangeResource(), bindingsResource()}
}

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// podResource is the Pod kind: returned as deleted, with a generation,
// kube's defaults, validation, table and subresources.
func podResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: podsGVR, Kind: "Pod", Singular: "pod", Namespaced: true, ShortNames: []string{"po"},
		Categories: []string{"all"}, Subresources: podSubresources(), Parts: podParts(), ReturnDeleted: true, ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true,
		Fields: podFields, Defaults: defaultPod, Prepare: preparePod, Validate: validatePod, ValidateUpdate: validatePodUpdate, ResetStatus: resetPodStatus, Table: podTable,
		// The status subresource resets the deletion and the owners with
		// the spec, as kube's pod status strategy does (B.8).
		Untracked: map[string]*fieldpath.Set{"status": fieldpath.NewSet(fieldpath.MakePathOrDie("spec"),
			fieldpath.MakePathOrDie("metadata", "deletionTimestamp"), fieldpath.MakePathOrDie("metadata", "ownerReferences"))}}
}

func podFields(obj runtime.Object, set fields.Set) {
	p := obj.(*corev1.Pod)
	set["spec.nodeName"] = p.Spec.NodeName
	set["spec.restartPolicy"] = string(p.Spec.RestartPolicy)
	set["spec.schedulerName"] = p.Spec.SchedulerName
	set["spec.serviceAccountName"] = p.Spec.ServiceAccountName
	set["spec.hostNetwork"] = strconv.FormatBool(p.Spec.HostNetwork)
	set["status.phase"] = string(p.Status.Phase)
	set["status.podIP"] = ""
	if len(p.Status.PodIPs) > 0 {
		set["status.podIP"] = p.Status.PodIPs[0].IP
	} else {
		set["status.podIP"] = p.Status.PodIP
	}
	set["status.nominatedNodeName"] = p.Status.NominatedNodeName
}

func resetPodStatus(obj, old runtime.Object) {
	p := obj.(*corev1.Pod)
	if old == nil {
		p.Status = corev1.PodStatus{}
		return
	}
	p.Status = old.(*corev1.Pod).Status
}

// defaultPod fills the defaults kube-apiserver gives a pod, so that clients
// (schedulers, kubelets, kubectl describe) see the same fields: those of
// every pod spec, and those kube gives a Pod only.
func defaultPod(obj runtime.Object) {
	p := obj.(*corev1.Pod)
	DefaultPodSpec(&p.Spec)
	defaultPodOnly(&p.Spec)
	defaultPodIPs(&p.Status)
}

// defaultPodIPs keeps status.podIP and status.podIPs in step, as kube's
// SetDefaults_PodStatus does: each is filled from the other, and podIP
// wins when both are set and the first of podIPs differs.
func defaultPodIPs(st *corev1.PodStatus) {
	switch {
	case st.PodIP != "" && (len(st.PodIPs) == 0 || st.PodIPs[0].IP != st.PodIP):
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
	case st.PodIP == "" && len(st.PodIPs) > 0:
		st.PodIP = st.PodIPs[0].IP
	}
}

// defaultPodOnly fills what kube defaults on a Pod and not in a pod
// template (its SetDefaults_Pod): a negative grace period becomes 1, a
// limit without a request is the request too, and service links are on.
func defaultPodOnly(s *corev1.PodSpec) {
	if g := s.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		// kube accepts a negative grace period and stores 1 (D.5).
		one := int64(1)
		s.TerminationGracePeriodSeconds = &one
	}
	if s.EnableServiceLinks == nil {
		t := true
		s.EnableServiceLinks = &t
	}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			defaultRequests(&cs[i].Resources)
		}
	}
}

// preparePod sets what kube-apiserver's admission and pod strategy set
// after the defaults: the priority an update leaves out (the old one) or a
// pod created without the Priority plugin has (0), and a new pod's status.
func preparePod(obj, old runtime.Object) {
	p := obj.(*corev1.Pod)
	s := &p.Spec
	if old != nil {
		if o := old.(*corev1.Pod).Spec; s.Priority == nil {
			s.Priority, s.PreemptionPolicy = o.Priority, o.PreemptionPolicy
		}
	}
	defaultPriority(s)
	if old == nil {
		p.Status.Phase = corev1.PodPending
		p.Status.QOSClass = qosClass(s)
	}
}

// defaultPriority gives a pod without a priority class kube's default
// priority, as kube-apiserver's Priority admission plugin does.
func defaultPriority(s *corev1.PodSpec) {
	if s.Priority == nil {
		var zero int32
		s.Priority = &zero
	}
	if s.PreemptionPolicy == nil {
		pp := corev1.PreemptLowerPriority
		s.PreemptionPolicy = &pp
	}
}

// qosClass is BestEffort without requests or limits, Guaranteed when every
// container limits CPU and memory with requests equal to limits, else
// Burstable.
func qosClass(s *corev1.PodSpec) corev1.PodQOSClass {
	any, guaranteed := false, true
	for _, c := range s.Containers {
		if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
			any = true
		}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			l, ok := c.Resources.Limits[name]
			if !ok {
				guaranteed = false
				continue
			}
			if r, ok := c.Resources.Requests[name]; ok && r.Cmp(l) != 0 {
				guaranteed = false
			}
		}
	}
	switch {
	case !any:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// defaultRequests makes each limit without a request its request too, as
// kube defaults a pod's containers (D.5).
func defaultRequests(r *corev1.ResourceRequirements) {
	for name, l := range r.Limits {
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		r.Requests[name] = l.DeepCopy()
	}
}
