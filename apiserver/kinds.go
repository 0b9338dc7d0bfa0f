package apiserver

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kind-specific behaviour of the built-in resources: selectable fields,
// server-side defaults, validation and status handling.

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

func nodeFields(obj runtime.Object, set fields.Set) {
	set["spec.unschedulable"] = strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)
}

func secretFields(obj runtime.Object, set fields.Set) {
	set["type"] = string(obj.(*corev1.Secret).Type)
}

func coreEventFields(obj runtime.Object, set fields.Set) {
	e := obj.(*corev1.Event)
	set["involvedObject.kind"] = e.InvolvedObject.Kind
	set["involvedObject.namespace"] = e.InvolvedObject.Namespace
	set["involvedObject.name"] = e.InvolvedObject.Name
	set["involvedObject.uid"] = string(e.InvolvedObject.UID)
	set["involvedObject.apiVersion"] = e.InvolvedObject.APIVersion
	set["involvedObject.resourceVersion"] = e.InvolvedObject.ResourceVersion
	set["involvedObject.fieldPath"] = e.InvolvedObject.FieldPath
	set["reason"] = e.Reason
	set["reportingComponent"] = e.ReportingController
	set["source"] = e.Source.Component
	set["type"] = e.Type
}

func defaultNamespace(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

func prepareNamespace(obj, _ runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
	if len(ns.Spec.Finalizers) == 0 {
		ns.Spec.Finalizers = []corev1.FinalizerName{corev1.FinalizerKubernetes}
	}
}

func resetNamespaceStatus(obj, old runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if old == nil {
		ns.Status = corev1.NamespaceStatus{}
		return
	}
	ns.Status = old.(*corev1.Namespace).Status
}

func resetNodeStatus(obj, old runtime.Object) {
	if old == nil {
		return // a node registers with its status, as kubelets do
	}
	obj.(*corev1.Node).Status = old.(*corev1.Node).Status
}

func resetPodStatus(obj, old runtime.Object) {
	p := obj.(*corev1.Pod)
	if old == nil {
		p.Status = corev1.PodStatus{}
		return
	}
	p.Status = old.(*corev1.Pod).Status
}

// defaultSecret defaults the type and folds stringData into data (D.6), as
// decoding does in kube-apiserver: kube never stores stringData, its keys
// overwrite data's, and a read shows them base64-encoded under data like
// the rest.
func defaultSecret(obj runtime.Object) {
	s := obj.(*corev1.Secret)
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

// defaultPod fills the defaults kube-apiserver gives a pod, so that clients
// (schedulers, kubelets, kubectl describe) see the same fields.
func defaultPod(obj runtime.Object) {
	s := &obj.(*corev1.Pod).Spec
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	if s.TerminationGracePeriodSeconds == nil {
		g := int64(corev1.DefaultTerminationGracePeriodSeconds)
		s.TerminationGracePeriodSeconds = &g
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.EnableServiceLinks == nil {
		t := true
		s.EnableServiceLinks = &t
	}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			defaultContainer(&cs[i])
		}
	}
}

// preparePod sets what kube-apiserver's admission and pod strategy set
// after the defaults: the priority, and a new pod's status.
func preparePod(obj, old runtime.Object) {
	p := obj.(*corev1.Pod)
	s := &p.Spec
	if s.Priority == nil {
		var zero int32
		s.Priority = &zero
	}
	if s.PreemptionPolicy == nil {
		pp := corev1.PreemptLowerPriority
		s.PreemptionPolicy = &pp
	}
	if old == nil {
		p.Status.Phase = corev1.PodPending
		p.Status.QOSClass = qosClass(s)
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if img := c.Image; !strings.Contains(img[strings.LastIndex(img, "/")+1:], ":") || strings.HasSuffix(img, ":latest") {
			if !strings.Contains(img, "@") {
				c.ImagePullPolicy = corev1.PullAlways
			}
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
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

// validatePod checks what a pod needs to be runnable: at least one
// container, each with a DNS-label name unique in the pod and an image.
func validatePod(obj, _ runtime.Object) field.ErrorList {
	p := obj.(*corev1.Pod)
	var errs field.ErrorList
	specPath := field.NewPath("spec")
	if len(p.Spec.Containers) == 0 {
		errs = append(errs, field.Required(specPath.Child("containers"), ""))
	}
	names := map[string]bool{}
	check := func(cs []corev1.Container, fp *field.Path) {
		for i, c := range cs {
			cp := fp.Index(i)
			switch {
			case c.Name == "":
				errs = append(errs, field.Required(cp.Child("name"), ""))
			case names[c.Name]:
				errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
			default:
				for _, msg := range apivalidation.NameIsDNSLabel(c.Name, false) {
					errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
				}
			}
			names[c.Name] = true
			if strings.TrimSpace(c.Image) == "" {
				errs = append(errs, field.Required(cp.Child("image"), ""))
			}
			for j, port := range c.Ports {
				if port.ContainerPort < 1 || port.ContainerPort > 65535 {
					errs = append(errs, field.Invalid(cp.Child("ports").Index(j).Child("containerPort"), port.ContainerPort, "must be between 1 and 65535, inclusive"))
				}
			}
		}
	}
	check(p.Spec.InitContainers, specPath.Child("initContainers"))
	check(p.Spec.Containers, specPath.Child("containers"))
	return errs
}
