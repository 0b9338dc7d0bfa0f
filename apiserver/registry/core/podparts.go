package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// The pods' ephemeralcontainers and resize subresources (D.9): each
// update writes one part of the pod's spec, the rest of the pod, its
// labels and annotations included, staying as stored; the generation
// counts a changed spec, and the answer is the pod.

// podParts are the Parts of the Pod resource.
func podParts() map[string]apiserver.Part {
	return map[string]apiserver.Part{
		"ephemeralcontainers": {Take: takeEphemeralContainers, Validate: validateEphemeralUpdate},
		"resize":              {Take: takeResize, Validate: validateResize},
	}
}

// takeEphemeralContainers copies the body's ephemeral containers into
// obj, a copy of the stored pod.
func takeEphemeralContainers(obj, from runtime.Object) {
	obj.(*corev1.Pod).Spec.EphemeralContainers = from.(*corev1.Pod).Spec.EphemeralContainers
}

// validateEphemeralUpdate checks the pod as any pod is checked, then that
// no ephemeral container went or changed: they may only be added.
func validateEphemeralUpdate(obj, old runtime.Object) field.ErrorList {
	p, o := obj.(*corev1.Pod), old.(*corev1.Pod)
	errs := validatePod(obj, old)
	if _, ok := o.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods do not support ephemeral containers")}
	}
	path := field.NewPath("spec", "ephemeralContainers")
	byName := make(map[string]*corev1.EphemeralContainer, len(p.Spec.EphemeralContainers))
	for i := range p.Spec.EphemeralContainers {
		byName[p.Spec.EphemeralContainers[i].Name] = &p.Spec.EphemeralContainers[i]
	}
	for _, was := range o.Spec.EphemeralContainers {
		now, ok := byName[was.Name]
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("existing ephemeral containers %q may not be removed\n", was.Name)))
		case !apiequality.Semantic.DeepEqual(was, *now):
			errs = append(errs, field.Forbidden(path, fmt.Sprintf("existing ephemeral containers %q may not be changed\n%v", was.Name, valueDiff(was, *now))))
		}
	}
	return errs
}

// valueDiff is the diff kube's refusals show between two values of its
// internal types, which have the fields of corev1's without their tags.
func valueDiff(a, b any) string {
	var x, y bytes.Buffer
	if err := specJSON(&x, reflect.ValueOf(a)); err != nil {
		return fmt.Sprintf("error generating diff: %v", err)
	}
	if err := specJSON(&y, reflect.ValueOf(b)); err != nil {
		return fmt.Sprintf("error generating diff: %v", err)
	}
	return diff.Diff(json.RawMessage(x.Bytes()), json.RawMessage(y.Bytes()))
}

// ephemeralFields are the fields an ephemeral container may set; the
// others (ports, resources, probes, lifecycle, ...) are refused, as
// an ephemeral container must not carry the pod's own service.
var ephemeralFields = map[string]bool{
	"Name": true, "Image": true, "Command": true, "Args": true, "WorkingDir": true, "EnvFrom": true, "Env": true,
	"VolumeMounts": true, "VolumeDevices": true, "TerminationMessagePath": true, "TerminationMessagePolicy": true,
	"ImagePullPolicy": true, "SecurityContext": true, "Stdin": true, "StdinOnce": true, "TTY": true,
}

// validateEphemeralContainers checks a pod's ephemeral containers as kube
// does within the pod spec: each as a container, its name unique among
// all the pod's containers, its target one of the pod's other containers,
// only the allowed fields set and no subPath mounts.
func validateEphemeralContainers(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	if len(s.EphemeralContainers) == 0 {
		return nil
	}
	others, all := map[string]bool{}, map[string]bool{}
	for _, cs := range [][]corev1.Container{s.Containers, s.InitContainers} {
		for _, c := range cs {
			others[c.Name], all[c.Name] = true, true
		}
	}
	var errs field.ErrorList
	for i := range s.EphemeralContainers {
		ec := &s.EphemeralContainers[i]
		ip := path.Index(i)
		errs = append(errs, validateContainer((*corev1.Container)(&ec.EphemeralContainerCommon), ip)...)
		if all[ec.Name] {
			errs = append(errs, field.Duplicate(ip.Child("name"), ec.Name))
		} else {
			all[ec.Name] = true
		}
		if ec.TargetContainerName != "" && !others[ec.TargetContainerName] {
			errs = append(errs, field.NotFound(ip.Child("targetContainerName"), ec.TargetContainerName))
		}
		errs = append(errs, onlyEphemeralFields(ec.EphemeralContainerCommon, ip)...)
		for j, vm := range ec.VolumeMounts {
			if vm.SubPath != "" {
				errs = append(errs, field.Forbidden(ip.Child("volumeMounts").Index(j).Child("subPath"), "cannot be set for an Ephemeral Container"))
			}
			if vm.SubPathExpr != "" {
				errs = append(errs, field.Forbidden(ip.Child("volumeMounts").Index(j).Child("subPathExpr"), "cannot be set for an Ephemeral Container"))
			}
		}
	}
	return errs
}

// onlyEphemeralFields refuses each field of c set but not in
// ephemeralFields, named as JSON names it.
func onlyEphemeralFields(c corev1.EphemeralContainerCommon, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	v := reflect.ValueOf(c)
	for i := 0; i < v.NumField(); i++ {
		name := v.Type().Field(i).Name
		if ephemeralFields[name] || v.Field(i).IsZero() {
			continue
		}
		r, n := utf8.DecodeRuneInString(name)
		errs = append(errs, field.Forbidden(path.Child(string(unicode.ToLower(r))+name[n:]), "cannot be set for an Ephemeral Container"))
	}
	return errs
}

// defaultEphemeralContainers gives ephemeral containers the defaults of
// any container.
func defaultEphemeralContainers(s *corev1.PodSpec) {
	for i := range s.EphemeralContainers {
		defaultContainer((*corev1.Container)(&s.EphemeralContainers[i].EphemeralContainerCommon))
	}
}
