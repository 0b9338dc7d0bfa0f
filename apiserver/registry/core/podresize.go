package core

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// A pod's resize (D.9): in-place vertical scaling, on in 1.37, lets the
// cpu and memory of a pod's containers, its init containers and the pod
// itself change; requests and limits may not be removed, nothing else may
// change, and the pod's QoS class stays.

// takeResize copies into obj, a copy of the stored pod, the resources and
// resize policies of the body's containers and the pod-level resources.
// Containers added, removed, renamed or reordered are taken as sent, for
// validation to refuse.
func takeResize(obj, from runtime.Object) {
	p, f := obj.(*corev1.Pod), from.(*corev1.Pod)
	// A client that knows no pod-level resources leaves them as they were.
	if f.Spec.Resources != nil {
		p.Spec.Resources = f.Spec.Resources
	}
	p.Spec.Containers = takeResizedContainers(p.Spec.Containers, f.Spec.Containers)
	p.Spec.InitContainers = takeResizedContainers(p.Spec.InitContainers, f.Spec.InitContainers)
}

func takeResizedContainers(stored, sent []corev1.Container) []corev1.Container {
	if len(sent) != len(stored) {
		return sent
	}
	out := make([]corev1.Container, len(stored))
	copy(out, stored)
	for i := range sent {
		if sent[i].Name != stored[i].Name {
			return sent
		}
		out[i].Resources, out[i].ResizePolicy = sent[i].Resources, sent[i].ResizePolicy
	}
	return out
}

// validateResize checks the pod as any pod is checked, then the resize,
// in kube's order and with its messages.
func validateResize(obj, old runtime.Object) field.ErrorList {
	p, o := obj.(*corev1.Pod), old.(*corev1.Pod)
	errs := validatePod(obj, old)
	if _, ok := o.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}
	}
	if o.Spec.OS != nil && o.Spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")}
	}
	specPath := field.NewPath("spec")
	oldQOS := o.Status.QOSClass
	if oldQOS == "" {
		oldQOS = qosClass(&o.Spec)
	}
	if oldQOS != qosClass(&p.Spec) {
		errs = append(errs, field.Invalid(specPath, p.Status.QOSClass, "Pod QOS Class may not change as a result of resizing"))
	}
	if !resizeSupported(o) {
		errs = append(errs, field.Forbidden(specPath, "Pod running on node without support for resize"))
	}
	masked := p.Spec.DeepCopy()
	if podLevelResources(o) || podLevelResources(p) {
		errs = append(errs, podLevelResize(p, o, masked, specPath)...)
	}
	if ordering := resizeOrdering(p, o, specPath); ordering != nil {
		return append(errs, ordering...)
	}
	for i := range o.Spec.InitContainers {
		errs = append(errs, nothingRemoved(&p.Spec.InitContainers[i].Resources, &o.Spec.InitContainers[i].Resources, specPath.Child("initContainers").Index(i).Child("resources"))...)
	}
	for i := range o.Spec.Containers {
		errs = append(errs, nothingRemoved(&p.Spec.Containers[i].Resources, &o.Spec.Containers[i].Resources, specPath.Child("containers").Index(i).Child("resources"))...)
	}
	for i := range masked.Containers {
		c := &masked.Containers[i]
		maskCPUMemory(c, &o.Spec.Containers[i])
		if !apiequality.Semantic.DeepEqual(*c, o.Spec.Containers[i]) {
			errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
		}
	}
	for i := range masked.InitContainers {
		c := &masked.InitContainers[i]
		changed := !apiequality.Semantic.DeepEqual(*c, o.Spec.InitContainers[i])
		maskCPUMemory(c, &o.Spec.InitContainers[i])
		ip := specPath.Child("initContainers").Index(i)
		if !apiequality.Semantic.DeepEqual(*c, o.Spec.InitContainers[i]) {
			errs = append(errs, field.Forbidden(ip, "only cpu and memory resources for init or sidecar containers are mutable"))
		}
		if changed && !restartableInit(c) {
			for _, rp := range c.ResizePolicy {
				if rp.RestartPolicy == corev1.RestartContainer {
					errs = append(errs, field.Forbidden(ip, "non-sidecar init containers with a resize policy of RestartContainer cannot be resized"))
				}
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if !apiequality.Semantic.DeepEqual(*masked, o.Spec) {
		errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable"))
	}
	return errs
}

func restartableInit(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// resizeSupported: a pod whose running container reports no resources
// runs on a node that cannot resize; one with no running container is
// taken to be resizable.
func resizeSupported(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running != nil {
			return cs.Resources != nil
		}
	}
	return true
}

func podLevelResources(p *corev1.Pod) bool {
	r := p.Spec.Resources
	return r != nil && len(r.Requests)+len(r.Limits) > 0
}

// podLevelResize checks the pod-level resources, and puts the old cpu and
// memory into masked.
func podLevelResize(p, o *corev1.Pod, masked *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	rp := specPath.Child("resources")
	if o.Spec.Resources != nil && p.Spec.Resources == nil {
		return field.ErrorList{field.Forbidden(rp, "pod-level resources cannot be removed")}
	}
	var errs field.ErrorList
	if o.Spec.Resources != nil {
		if removed(p.Spec.Resources.Requests, o.Spec.Resources.Requests) {
			errs = append(errs, field.Forbidden(rp.Child("requests"), "pod-level resource requests cannot be removed"))
		}
		if removed(p.Spec.Resources.Limits, o.Spec.Resources.Limits) {
			errs = append(errs, field.Forbidden(rp.Child("limits"), "pod-level resource limits cannot be removed"))
		}
	}
	if r := masked.Resources; r != nil {
		var oldReq, oldLim corev1.ResourceList
		if o.Spec.Resources != nil {
			oldReq, oldLim = o.Spec.Resources.Requests, o.Spec.Resources.Limits
		}
		r.Requests, r.Limits = maskedList(r.Requests, oldReq), maskedList(r.Limits, oldLim)
		if o.Spec.Resources == nil && len(r.Requests) == 0 && len(r.Limits) == 0 && len(r.Claims) == 0 {
			masked.Resources = nil
		}
	}
	if !apiequality.Semantic.DeepEqual(masked.Resources, o.Spec.Resources) {
		errs = append(errs, field.Forbidden(specPath, "only cpu and memory resources are mutable at pod-level"))
	}
	return errs
}

// resizeOrdering refuses containers added, removed, renamed or reordered.
func resizeOrdering(p, o *corev1.Pod, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, l := range []struct {
		kind     string
		new, old []corev1.Container
	}{{"containers", p.Spec.Containers, o.Spec.Containers}, {"initContainers", p.Spec.InitContainers, o.Spec.InitContainers}} {
		if len(l.new) != len(l.old) {
			errs = append(errs, field.Forbidden(specPath.Child(l.kind), l.kind+" may not be added or removed on resize"))
			continue
		}
		for i := range l.old {
			if l.new[i].Name != l.old[i].Name {
				errs = append(errs, field.Forbidden(specPath.Child(l.kind).Index(i).Child("name"), l.kind+" may not be renamed or reordered on resize"))
			}
		}
	}
	return errs
}

func nothingRemoved(r, old *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if removed(r.Requests, old.Requests) {
		errs = append(errs, field.Forbidden(path.Child("requests"), "resource requests cannot be removed"))
	}
	if removed(r.Limits, old.Limits) {
		errs = append(errs, field.Forbidden(path.Child("limits"), "resource limits cannot be removed"))
	}
	return errs
}

func removed(list, old corev1.ResourceList) bool {
	for name := range old {
		if _, ok := list[name]; !ok {
			return true
		}
	}
	return false
}

// maskCPUMemory gives c the cpu and memory of old, so that what is left
// to compare is what a resize may not change.
func maskCPUMemory(c, old *corev1.Container) {
	c.Resources = corev1.ResourceRequirements{Limits: maskedList(c.Resources.Limits, old.Resources.Limits),
		Requests: maskedList(c.Resources.Requests, old.Resources.Requests), Claims: c.Resources.Claims}
}

func maskedList(list, old corev1.ResourceList) corev1.ResourceList {
	if list == nil && old == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for name, q := range list {
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			out[name] = q
		}
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := old[name]; ok {
			out[name] = q
		}
	}
	return out
}
