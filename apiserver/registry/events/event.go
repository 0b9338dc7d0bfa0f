// Package events is the events.k8s.io API group: its v1 Events, which
// kube-apiserver stores as core v1 Events and checks and prints in that
// form with apiserver/registry/core's rules, adding its own on top (D.5).
package events

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry/core"
)

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{{GVR: eventsv1.SchemeGroupVersion.WithResource("events"), Kind: "Event", Singular: "event", Namespaced: true,
		GC: apiserver.GCUnsupported, ShortNames: []string{"ev"}, ValidateName: apivalidation.NameIsDNSSubdomain,
		StoredAs: corev1.SchemeGroupVersion.WithKind("Event"), Validate: validateEvent, Table: eventTable}}
}

// asCore is e in its core form: the fields kube maps onto each other when
// it converts between the two versions.
func asCore(e *eventsv1.Event) *corev1.Event {
	c := &corev1.Event{
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
		Action:              e.Action,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		c.Series = &corev1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return c
}

// validateEvent: events.k8s.io/v1 adds stricter rules to the core ones on
// create, and on update keeps what the event reports fixed.
func validateEvent(obj, old runtime.Object) field.ErrorList {
	e := obj.(*eventsv1.Event)
	errs := core.ValidateEventCommon(asCore(e), "reportingController")
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

// eventTable shows events through their core form, with the core events'
// columns.
var eventTable = &apiserver.TableDef{
	Columns: core.EventColumns,
	Cells: func(obj runtime.Object, now time.Time) []any {
		return core.EventCells(asCore(obj.(*eventsv1.Event)), now)
	},
}
