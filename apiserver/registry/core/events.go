package core

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// Events, core/v1: kube-apiserver stores events.k8s.io/v1 events as core
// v1 Events too, validates both with one set of rules and prints both with
// one table; apiserver/registry/events writes its events in their core
// form for ValidateEventCommon, EventColumns and EventCells.

func coreEventResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: corev1.SchemeGroupVersion.WithResource("events"), Kind: "Event", Singular: "event", Namespaced: true, GC: apiserver.GCUnsupported,
		ShortNames: []string{"ev"}, ValidateName: apivalidation.NameIsDNSSubdomain, Fields: coreEventFields, Validate: validateCoreEvent, Table: coreEventTable}
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

// Length limits of events.
const (
	reportingInstanceMax = 128
	actionMax            = 128
	reasonMax            = 128
	noteMax              = 1024
)

// ValidateEventCommon is what every Event must satisfy, whichever API
// wrote it, given in its core form. An event without eventTime is an
// old-style one: only its namespace is checked. controllerField names the
// reporting controller as the request's API version does.
func ValidateEventCommon(e *corev1.Event, controllerField string) field.ErrorList {
	var errs field.ErrorList
	ns := field.NewPath("involvedObject", "namespace")
	if e.EventTime.IsZero() {
		switch {
		case e.InvolvedObject.Namespace == "" && e.Namespace != "" && e.Namespace != metav1.NamespaceDefault,
			e.InvolvedObject.Namespace != "" && e.Namespace != e.InvolvedObject.Namespace:
			errs = append(errs, field.Invalid(ns, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		return errs
	}
	if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
		errs = append(errs, field.Invalid(ns, e.InvolvedObject.Namespace, "does not match event.namespace"))
	}
	if e.ReportingController == "" {
		errs = append(errs, field.Required(field.NewPath(controllerField), ""))
	}
	errs = append(errs, qualifiedName(field.NewPath(controllerField), e.ReportingController)...)
	tooLong := func(name, v string, max int) {
		if v == "" && name != "message" {
			errs = append(errs, field.Required(field.NewPath(name), ""))
		}
		if len(v) > max {
			// kube shows no value.
			errs = append(errs, field.Invalid(field.NewPath(name), "", fmt.Sprintf("can have at most %v characters", max)))
		}
	}
	tooLong("reportingInstance", e.ReportingInstance, reportingInstanceMax)
	tooLong("action", e.Action, actionMax)
	tooLong("reason", e.Reason, reasonMax)
	tooLong("message", e.Message, noteMax)
	return errs
}

// validateCoreEvent: a core/v1 Event gets only the common checks, on
// create and update alike.
func validateCoreEvent(obj, _ runtime.Object) field.ErrorList {
	return ValidateEventCommon(obj.(*corev1.Event), "reportingComponent")
}

var eventDoc = corev1.Event{}.SwaggerDoc()

// EventColumns are the same for core and events.k8s.io events: kube
// prints both from one internal type.
var EventColumns = []metav1.TableColumnDefinition{
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
	Columns: EventColumns,
	Cells: func(obj runtime.Object, now time.Time) []any {
		return EventCells(obj.(*corev1.Event), now)
	},
}

// EventCells are an event's row, in its core form: the old timestamps
// fall back to eventTime, and a count to the series' count (1 for a
// single event).
func EventCells(e *corev1.Event, now time.Time) []any {
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
