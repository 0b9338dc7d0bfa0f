package apiserver

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validation of Namespaces and Events (D.5).

// validateNamespace checks the finalizers of a new Namespace, and on
// every update that the phase agrees with the deletion timestamp. kube
// names the field status.Phase, capital P.
func validateNamespace(obj, old runtime.Object) field.ErrorList {
	ns := obj.(*corev1.Namespace)
	if old == nil {
		var errs field.ErrorList
		path := field.NewPath("spec", "finalizers")
		for _, f := range ns.Spec.Finalizers {
			errs = append(errs, apivalidation.ValidateFinalizerName(string(f), path)...)
			if !strings.Contains(string(f), "/") && !standardFinalizers[string(f)] {
				errs = append(errs, field.Invalid(path, string(f), "name is neither a standard finalizer name nor is it fully qualified"))
			}
		}
		return errs
	}
	var errs field.ErrorList
	for i, f := range ns.Spec.Finalizers {
		// only the finalize subresource can change them
		path := field.NewPath("spec", "finalizers").Index(i)
		errs = append(errs, apivalidation.ValidateFinalizerName(string(f), path)...)
		if !strings.Contains(string(f), "/") && !standardFinalizers[string(f)] {
			errs = append(errs, field.Invalid(path, string(f), "name is neither a standard finalizer name nor is it fully qualified"))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	phase := field.NewPath("status", "Phase")
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			return field.ErrorList{field.Invalid(phase, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty")}
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		return field.ErrorList{field.Invalid(phase, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")}
	}
	return nil
}

// standardFinalizers may be written without a domain.
var standardFinalizers = map[string]bool{
	string(corev1.FinalizerKubernetes): true, metav1.FinalizerOrphanDependents: true, metav1.FinalizerDeleteDependents: true,
}

// eventFields is what kube's event validation reads, from either API
// version. Paths use kube's internal names (involvedObject, message).
type eventFields struct {
	namespace, involvedNamespace                           string
	eventTime                                              metav1.MicroTime
	reportingController, reportingInstance, action, reason string
	message, eventType                                     string
}

// Length limits of events.
const (
	reportingInstanceMax = 128
	actionMax            = 128
	reasonMax            = 128
	noteMax              = 1024
)

// validateEventCommon is what every Event must satisfy, whichever API
// wrote it. An event without eventTime is an old-style one: only its
// namespace is checked. controllerField names the reporting controller
// as the request's API version does.
func validateEventCommon(e eventFields, controllerField string) field.ErrorList {
	var errs field.ErrorList
	ns := field.NewPath("involvedObject", "namespace")
	if e.eventTime.IsZero() {
		switch {
		case e.involvedNamespace == "" && e.namespace != "" && e.namespace != metav1.NamespaceDefault,
			e.involvedNamespace != "" && e.namespace != e.involvedNamespace:
			errs = append(errs, field.Invalid(ns, e.involvedNamespace, "does not match event.namespace"))
		}
		return errs
	}
	if e.involvedNamespace == "" && e.namespace != metav1.NamespaceDefault && e.namespace != metav1.NamespaceSystem {
		errs = append(errs, field.Invalid(ns, e.involvedNamespace, "does not match event.namespace"))
	}
	if e.reportingController == "" {
		errs = append(errs, field.Required(field.NewPath(controllerField), ""))
	}
	errs = append(errs, qualifiedName(field.NewPath(controllerField), e.reportingController)...)
	tooLong := func(name, v string, max int) {
		if v == "" && name != "message" {
			errs = append(errs, field.Required(field.NewPath(name), ""))
		}
		if len(v) > max {
			// kube shows no value.
			errs = append(errs, field.Invalid(field.NewPath(name), "", fmt.Sprintf("can have at most %v characters", max)))
		}
	}
	tooLong("reportingInstance", e.reportingInstance, reportingInstanceMax)
	tooLong("action", e.action, actionMax)
	tooLong("reason", e.reason, reasonMax)
	tooLong("message", e.message, noteMax)
	return errs
}

// validateCoreEvent: a core/v1 Event gets only the common checks, on
// create and update alike.
func validateCoreEvent(obj, _ runtime.Object) field.ErrorList {
	e := obj.(*corev1.Event)
	return validateEventCommon(eventFields{namespace: e.Namespace, involvedNamespace: e.InvolvedObject.Namespace,
		eventTime: e.EventTime, reportingController: e.ReportingController, reportingInstance: e.ReportingInstance,
		action: e.Action, reason: e.Reason, message: e.Message, eventType: e.Type}, "reportingComponent")
}

// validateEventsV1Event: events.k8s.io/v1 adds stricter rules on create,
// and on update keeps what the event reports fixed.
func validateEventsV1Event(obj, old runtime.Object) field.ErrorList {
	e := obj.(*eventsv1.Event)
	errs := validateEventCommon(eventFields{namespace: e.Namespace, involvedNamespace: e.Regarding.Namespace,
		eventTime: e.EventTime, reportingController: e.ReportingController, reportingInstance: e.ReportingInstance,
		action: e.Action, reason: e.Reason, message: e.Note, eventType: e.Type}, "reportingController")
	if old != nil {
		o := old.(*eventsv1.Event)
		// kube checks reason twice and reports it once. The reference,
		// source, times and count are not compared here.
		for _, f := range []struct {
			name     string
			new, old string
		}{{"reason", e.Reason, o.Reason}, {"message", e.Note, o.Note}, {"type", e.Type, o.Type},
			{"action", e.Action, o.Action}, {"reportingController", e.ReportingController, o.ReportingController},
			{"reportingInstance", e.ReportingInstance, o.ReportingInstance}} {
			errs = append(errs, apivalidation.ValidateImmutableField(f.new, f.old, field.NewPath(f.name))...)
		}
		return errs
	}
	if s := e.Series; s != nil {
		if s.Count < 2 {
			errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
		}
		if s.LastObservedTime.IsZero() {
			errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
		}
	}
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != corev1.EventTypeNormal && e.Type != corev1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"firstTimestamp", !e.DeprecatedFirstTimestamp.IsZero()}, {"lastTimestamp", !e.DeprecatedLastTimestamp.IsZero()},
		{"count", e.DeprecatedCount != 0}, {"source", e.DeprecatedSource.Component != "" || e.DeprecatedSource.Host != ""}} {
		if f.set {
			errs = append(errs, field.Invalid(field.NewPath(f.name), "", "needs to be unset"))
		}
	}
	return errs
}
