package core

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// Events, core/v1 and events.k8s.io/v1: kube-apiserver stores both as
// core v1 Events, validates both with one set of rules and prints both
// with one table. The events.k8s.io resource is defined here beside the
// core one, not in a package of its own group, so that those rules and
// columns stay unexported.

func coreEventResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: corev1.SchemeGroupVersion.WithResource("events"), Kind: "Event", Singular: "event", Namespaced: true, GC: apiserver.GCUnsupported,
		ShortNames: []string{"ev"}, ValidateName: apivalidation.NameIsDNSSubdomain, Fields: coreEventFields, Validate: validateCoreEvent, Table: coreEventTable}
}

// eventsV1Resource is events.k8s.io/v1 events, stored as core v1 Events.
func eventsV1Resource() *apiserver.Resource {
	return &apiserver.Resource{GVR: eventsv1.SchemeGroupVersion.WithResource("events"), Kind: "Event", Singular: "event", Namespaced: true, GC: apiserver.GCUnsupported,
		ShortNames: []string{"ev"}, ValidateName: apivalidation.NameIsDNSSubdomain, StoredAs: corev1.SchemeGroupVersion.WithKind("Event"),
		Validate: validateEventsV1Event, Table: eventsTable}
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

var eventDoc = corev1.Event{}.SwaggerDoc()

// eventColumns are the same for core and events.k8s.io events: kube
// prints both from one internal type.
var eventColumns = []metav1.TableColumnDefinition{
	{Name: "Last Seen", Type: "string", Description: eventDoc["lastTimestamp"]},
	{Name: "Type", Type: "string", Description: eventDoc["type"]},
	{Name: "Reason", Type: "string", Description: eventDoc["reason"]},
	{Name: "Object", Type: "string", Description: eventDoc["involvedObject"]},
	{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
	{Name: "Source", Type: "string", Priority: 1, Description: eventDoc["source"]},
	{Name: "Message", Type: "string", Description: eventDoc["message"]},
	{Name: "First Seen", Type: "string", Priority: 1, Description: eventDoc["firstTimestamp"]},
	{Name: "Count", Type: "string", Priority: 1, Description: eventDoc["count"]},
	{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
}

var coreEventTable = &apiserver.TableDef{
	Columns: eventColumns,
	Cells: func(obj runtime.Object, now time.Time) []any {
		return eventCells(obj.(*corev1.Event), now)
	},
}

// eventsTable shows events.k8s.io events through their core form: the
// fields kube maps onto each other when it converts between the two.
var eventsTable = &apiserver.TableDef{
	Columns: eventColumns,
	Cells: func(obj runtime.Object, now time.Time) []any {
		e := obj.(*eventsv1.Event)
		core := &corev1.Event{
			ObjectMeta:          e.ObjectMeta,
			InvolvedObject:      e.Regarding,
			Reason:              e.Reason,
			Message:             e.Note,
			Source:              e.DeprecatedSource,
			FirstTimestamp:      e.DeprecatedFirstTimestamp,
			LastTimestamp:       e.DeprecatedLastTimestamp,
			Count:               e.DeprecatedCount,
			Type:                e.Type,
			EventTime:           e.EventTime,
			ReportingController: e.ReportingController,
			ReportingInstance:   e.ReportingInstance,
		}
		if e.Series != nil {
			core.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
		}
		return eventCells(core, now)
	},
}

// eventCells falls back from the old timestamps to eventTime, and from a
// count to the series' count (1 for a single event).
func eventCells(e *corev1.Event, now time.Time) []any {
	micro := func(t metav1.MicroTime) string {
		if t.IsZero() {
			return "<unknown>"
		}
		return duration.HumanDuration(now.Sub(t.Time))
	}
	first := apiserver.Age(e.FirstTimestamp, now)
	if e.FirstTimestamp.IsZero() {
		first = micro(e.EventTime)
	}
	last := apiserver.Age(e.LastTimestamp, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	switch {
	case e.Series != nil:
		last, count = micro(e.Series.LastObservedTime), e.Series.Count
	case count == 0:
		count = 1
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	firstOf := func(a, b string) string {
		if a != "" {
			return a
		}
		return b
	}
	source := firstOf(e.Source.Component, e.ReportingController)
	if host := firstOf(e.Source.Host, e.ReportingInstance); host != "" {
		source += ", " + host
	}
	return []any{last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath, source,
		strings.TrimSpace(e.Message), first, int64(count), e.Name}
}
