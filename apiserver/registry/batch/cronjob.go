package batch

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry/core"
)

// CronJobs (batch/v1) are stored with kube-apiserver's defaults and
// validation (D.5); no controller makes Jobs from them.

// cronJobResource is the CronJob kind of the group.
func cronJobResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: batchv1.SchemeGroupVersion.WithResource("cronjobs"), Kind: "CronJob", Singular: "cronjob", Namespaced: true, ShortNames: []string{"cj"},
		Categories: []string{"all"}, Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()}, ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true,
		Defaults: defaultCronJob, Validate: validateCronJob, Warnings: cronJobWarnings,
		ValidateStatus: func(runtime.Object, runtime.Object) field.ErrorList { return nil },
		ResetStatus:    resetCronJobStatus, Table: cronJobTable}
}

// defaultCronJob fills SetDefaults_CronJob: concurrent runs allowed, not
// suspended, three successful and one failed Job kept; and the pod spec
// defaults of the job template's template. The job template's spec gets
// none of a Job's defaults.
func defaultCronJob(obj runtime.Object) {
	s := &obj.(*batchv1.CronJob).Spec
	if s.ConcurrencyPolicy == "" {
		s.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if s.Suspend == nil {
		s.Suspend = ptr.To(false)
	}
	if s.SuccessfulJobsHistoryLimit == nil {
		s.SuccessfulJobsHistoryLimit = ptr.To[int32](3)
	}
	if s.FailedJobsHistoryLimit == nil {
		s.FailedJobsHistoryLimit = ptr.To[int32](1)
	}
	core.DefaultPodSpec(&s.JobTemplate.Spec.Template.Spec)
}

// validateCronJob checks a CronJob as kube's validateCronJobSpec does, and
// on a create that its name leaves room for the Jobs' 11-character suffix.
func validateCronJob(obj, old runtime.Object) field.ErrorList {
	cj := obj.(*batchv1.CronJob)
	var oldSpec *batchv1.CronJobSpec
	if old != nil {
		oldSpec = &old.(*batchv1.CronJob).Spec
	}
	errs := validateCronJobSpec(&cj.Spec, oldSpec, field.NewPath("spec"))
	if old == nil && len(cj.Name) > validation.DNS1035LabelMaxLength-11 {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, "must be no more than 52 characters"))
	}
	return errs
}

func validateCronJobSpec(s, old *batchv1.CronJobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Schedule == "" {
		errs = append(errs, field.Required(path.Child("schedule"), ""))
	} else {
		errs = append(errs, scheduleFormat(s.Schedule, old != nil && strings.Contains(old.Schedule, "TZ"), s.TimeZone, path.Child("schedule"))...)
	}
	if s.StartingDeadlineSeconds != nil {
		errs = append(errs, apiserver.NonNegative(*s.StartingDeadlineSeconds, path.Child("startingDeadlineSeconds"))...)
	}
	if old == nil || !apiequality.Semantic.DeepEqual(old.TimeZone, s.TimeZone) {
		errs = append(errs, timeZone(s.TimeZone, path.Child("timeZone"))...)
	}
	cp := path.Child("concurrencyPolicy")
	switch s.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		errs = append(errs, field.Required(cp, ""))
	default:
		errs = append(errs, field.NotSupported(cp, s.ConcurrencyPolicy,
			[]batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	jp := path.Child("jobTemplate", "spec")
	js := &s.JobTemplate.Spec
	errs = append(errs, jobSpecChecks(js, jp)...)
	if js.Selector != nil {
		errs = append(errs, field.Invalid(jp.Child("selector"), js.Selector, "`selector` will be auto-generated"))
	}
	if ptr.Deref(js.ManualSelector, false) {
		errs = append(errs, field.NotSupported(jp.Child("manualSelector"), js.ManualSelector, []string{"nil", "false"}))
	}
	if s.SuccessfulJobsHistoryLimit != nil {
		errs = append(errs, apiserver.NonNegative(*s.SuccessfulJobsHistoryLimit, path.Child("successfulJobsHistoryLimit"))...)
	}
	if s.FailedJobsHistoryLimit != nil {
		errs = append(errs, apiserver.NonNegative(*s.FailedJobsHistoryLimit, path.Child("failedJobsHistoryLimit"))...)
	}
	return errs
}

// scheduleFormat parses a schedule as kube's cron job controller does
// (robfig/cron's standard parser), and refuses TZ= and CRON_TZ= in it
// unless the old schedule had them and there is no timeZone.
func scheduleFormat(schedule string, allowTZ bool, tz *string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if err := parseSchedule(schedule); err != nil {
		errs = append(errs, field.Invalid(path, schedule, err.Error()))
	}
	switch {
	case allowTZ && strings.Contains(schedule, "TZ") && tz != nil:
		errs = append(errs, field.Invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !allowTZ && strings.Contains(schedule, "TZ"):
		errs = append(errs, field.Invalid(path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

// parseSchedule is kube's ParseCronScheduleWithPanicRecovery.
func parseSchedule(schedule string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid schedule format: %v", r)
		}
	}()
	_, err = cron.ParseStandard(schedule)
	return err
}

// validTimeZonePart is a component of an IANA zone name, as kube accepts it.
var validTimeZonePart = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

func timeZone(tz *string, path *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(path, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !validTimeZonePart.MatchString(part) {
			return field.ErrorList{field.Invalid(path, tz, "unknown time zone "+*tz)}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(path, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(path, tz, err.Error()))
	}
	return errs
}

func resetCronJobStatus(obj, old runtime.Object) {
	cj := obj.(*batchv1.CronJob)
	cj.Status = batchv1.CronJobStatus{}
	if old != nil {
		cj.Status = old.(*batchv1.CronJob).Status
	}
}

// cronJobWarnings: a name that is not a DNS label on a create, the job
// template's pod template warnings when the spec changes, and TZ in the
// schedule on an update.
func cronJobWarnings(obj, old runtime.Object) []string {
	cj := obj.(*batchv1.CronJob)
	var w []string
	o, update := old.(*batchv1.CronJob)
	if !update {
		w = dnsLabelNameWarning(cj.Name)
	}
	if !update || !apiequality.Semantic.DeepEqual(cj.Spec, o.Spec) {
		w = append(w, jobSpecWarnings(&cj.Spec.JobTemplate.Spec, field.NewPath("spec", "jobTemplate", "spec"))...)
	}
	if update && strings.Contains(cj.Spec.Schedule, "TZ") {
		w = append(w, "cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details")
	}
	return w
}

var cronJobTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Schedule", Type: "string", Description: batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]},
		{Name: "Timezone", Type: "string", Description: batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"]},
		{Name: "Suspend", Type: "boolean", Description: batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]},
		{Name: "Active", Type: "integer", Description: batchv1.CronJobStatus{}.SwaggerDoc()["active"]},
		{Name: "Last Schedule", Type: "string", Description: batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]},
		apiserver.AgeColumn, core.ContainersColumn, core.ImagesColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]}},
	Cells: func(obj runtime.Object, now time.Time) []any {
		cj := obj.(*batchv1.CronJob)
		last := "<none>"
		if t := cj.Status.LastScheduleTime; t != nil {
			last = apiserver.Age(*t, now)
		}
		tz := "<none>"
		if cj.Spec.TimeZone != nil {
			tz = *cj.Spec.TimeZone
		}
		suspend := "<unset>"
		if cj.Spec.Suspend != nil {
			suspend = map[bool]string{true: "True", false: "False"}[*cj.Spec.Suspend]
		}
		js := &cj.Spec.JobTemplate.Spec
		names, images := core.ContainerCells(js.Template.Spec.Containers)
		return []any{cj.Name, cj.Spec.Schedule, tz, suspend, int64(len(cj.Status.Active)), last, apiserver.Age(cj.CreationTimestamp, now),
			names, images, metav1.FormatLabelSelector(js.Selector)}
	},
}
