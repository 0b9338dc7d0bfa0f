// Package batch is the batch API group: Jobs and CronJobs, stored with
// kube-apiserver's defaults and validation (D.5). No controller runs them
// here; apiserver deletes a Job's pods with it only when asked to.
package batch

import (
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry/core"
)

// Jobs (batch/v1) are stored with kube-apiserver's defaults, generated
// selector and validation (D.5); no controller runs them, so their status
// stays what its writers make it.

// Resources returns the group's resources, each a new value, for
// apiserver.Config.Resources.
func Resources() []*apiserver.Resource {
	return []*apiserver.Resource{jobResource(), cronJobResource()}
}

// jobResource is the Job kind of the group.
func jobResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: apiserver.JobsGVR, Kind: "Job", Singular: "job", Namespaced: true, Categories: []string{"all"},
		Subresources: map[string]apiserver.Subresource{"status": apiserver.StatusSubresource()}, ValidateName: apivalidation.NameIsDNSSubdomain, Generation: true, GC: apiserver.GCOrphan,
		Fields: jobFields, Defaults: defaultJob, Prepare: prepareJob, Validate: validateJob, ValidateUpdate: validateJobUpdate,
		Warnings: jobWarnings, ValidateStatus: validateJobStatus, ResetStatus: resetJobStatus, Table: jobTable}
}

// defaultJob fills SetDefaults_Job: one completion and one pod at a time
// when neither is set (parallelism 1 when only it is unset), six retries
// (MaxInt32 with a per-index limit), a non-indexed completion mode, not
// suspended, pods replaced once terminating (once failed with a pod
// failure policy), a selector to be generated, the template's labels when
// the Job has none; and the template's pod spec defaults.
func defaultJob(obj runtime.Object) {
	j := obj.(*batchv1.Job)
	s := &j.Spec
	if s.Completions == nil && s.Parallelism == nil {
		s.Completions = ptr.To[int32](1)
	}
	if s.Parallelism == nil {
		s.Parallelism = ptr.To[int32](1)
	}
	if s.BackoffLimit == nil {
		if s.BackoffLimitPerIndex != nil {
			s.BackoffLimit = ptr.To[int32](1<<31 - 1)
		} else {
			s.BackoffLimit = ptr.To[int32](6)
		}
	}
	// The Job shares the map with its template, as in kube, so that the
	// labels generated on the template are its labels too.
	if l := s.Template.Labels; l != nil && len(j.Labels) == 0 {
		j.Labels = l
	}
	if s.CompletionMode == nil {
		s.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
	}
	if s.Suspend == nil {
		s.Suspend = ptr.To(false)
	}
	if s.PodReplacementPolicy == nil {
		if s.PodFailurePolicy != nil {
			s.PodReplacementPolicy = ptr.To(batchv1.Failed)
		} else {
			s.PodReplacementPolicy = ptr.To(batchv1.TerminatingOrFailed)
		}
	}
	if s.ManualSelector == nil {
		s.ManualSelector = ptr.To(false)
	}
	core.DefaultPodSpec(&s.Template.Spec)
}

// The labels kube still puts on a Job's pods without its prefix.
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

// hasLabel is kube's ValidateHasLabel.
func hasLabel(meta metav1.ObjectMeta, path *field.Path, key, want string) field.ErrorList {
	got, ok := meta.Labels[key]
	switch {
	case !ok:
		return field.ErrorList{field.Required(path.Child("labels").Key(key), fmt.Sprintf("must be '%s'", want))}
	case got != want:
		return field.ErrorList{field.Invalid(path.Child("labels").Key(key), meta.Labels, fmt.Sprintf("must be '%s'", want))}
	}
	return nil
}

// prepareJob generates, on a create, what kube's job strategy does unless
// the selector is manual: the job-name and controller-uid labels (legacy
// and batch.kubernetes.io/) on the template, and a selector of the
// controller-uid. A Job without labels then gets the template's, as kube's
// defaults give them when the stored Job is read back.
func prepareJob(obj, old runtime.Object) {
	j := obj.(*batchv1.Job)
	if old != nil {
		return
	}
	if !ptr.Deref(j.Spec.ManualSelector, false) {
		t := &j.Spec.Template
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		for _, k := range []string{legacyJobNameLabel, batchv1.JobNameLabel} {
			if _, ok := t.Labels[k]; !ok {
				t.Labels[k] = j.Name
			}
		}
		for _, k := range []string{legacyControllerUIDLabel, batchv1.ControllerUidLabel} {
			if _, ok := t.Labels[k]; !ok {
				t.Labels[k] = string(j.UID)
			}
		}
		if j.Spec.Selector == nil {
			j.Spec.Selector = &metav1.LabelSelector{}
		}
		if j.Spec.Selector.MatchLabels == nil {
			j.Spec.Selector.MatchLabels = map[string]string{}
		}
		if _, ok := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
			j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
		}
	}
	if len(j.Labels) == 0 && j.Spec.Template.Labels != nil {
		j.Labels = maps.Clone(j.Spec.Template.Labels)
	}
}

// validateJob checks a Job as ValidateJobCreate and ValidateJobSpec do,
// in their order and words, but for pod failure, success and scheduling
// policies.
func validateJob(obj, old runtime.Object) field.ErrorList {
	j := obj.(*batchv1.Job)
	var errs field.ErrorList
	if old == nil {
		errs = generatedSelector(j)
	}
	errs = append(errs, validateJobSpec(&j.Spec, field.NewPath("spec"))...)
	return append(errs, nameAllowsCompletions(j)...)
}

// generatedSelector checks that a generated selector's labels are on the
// template and select this Job's pods.
func generatedSelector(j *batchv1.Job) field.ErrorList {
	if ptr.Deref(j.Spec.ManualSelector, false) || j.Spec.Selector == nil {
		return nil
	}
	tp := field.NewPath("spec", "template", "metadata")
	var errs field.ErrorList
	for _, l := range []struct{ k, v string }{
		{legacyControllerUIDLabel, string(j.UID)}, {legacyJobNameLabel, j.Name},
		{batchv1.ControllerUidLabel, string(j.UID)}, {batchv1.JobNameLabel, j.Name},
	} {
		errs = append(errs, hasLabel(j.Spec.Template.ObjectMeta, tp, l.k, l.v)...)
	}
	want := labels.Set{batchv1.ControllerUidLabel: string(j.UID), batchv1.JobNameLabel: j.Name,
		legacyControllerUIDLabel: string(j.UID), legacyJobNameLabel: j.Name}
	if sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !sel.Matches(want) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

// validateJobSpec is kube's ValidateJobSpec: jobSpecChecks, then a
// selector, required, valid and selecting the template's labels.
func validateJobSpec(s *batchv1.JobSpec, path *field.Path) field.ErrorList {
	errs := jobSpecChecks(s, path)
	if s.Selector == nil {
		errs = append(errs, field.Required(path.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(s.Selector, metav1validation.LabelSelectorValidationOptions{}, path.Child("selector"))...)
	}
	if sel, err := metav1.LabelSelectorAsSelector(s.Selector); err == nil && !sel.Matches(labels.Set(s.Template.Labels)) {
		errs = append(errs, field.Invalid(path.Child("template", "metadata", "labels"), s.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

// jobCompletionModeChecks checks a Job's completionMode and what it
// requires of the other fields.
func jobCompletionModeChecks(s *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if m := s.CompletionMode; m != nil {
		if *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
			errs = append(errs, field.NotSupported(path.Child("completionMode"), m,
				[]batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
		}
		if *m == batchv1.IndexedCompletion && s.Completions == nil {
			errs = append(errs, field.Required(path.Child("completions"), "when completion mode is Indexed"))
		}
	}
	if s.CompletionMode == nil || *s.CompletionMode == batchv1.NonIndexedCompletion {
		if s.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(path.Child("backoffLimitPerIndex"), *s.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if s.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(path.Child("maxFailedIndexes"), *s.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}
	return errs
}

// jobPodReplacementChecks checks a Job's podReplacementPolicy: Failed
// only under a podFailurePolicy.
func jobPodReplacementChecks(s *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p := s.PodReplacementPolicy; p != nil {
		if s.PodFailurePolicy != nil {
			if *p != batchv1.Failed {
				errs = append(errs, field.NotSupported(path.Child("podReplacementPolicy"), *p, []batchv1.PodReplacementPolicy{batchv1.Failed}))
			}
		} else if *p != batchv1.Failed && *p != batchv1.TerminatingOrFailed {
			errs = append(errs, field.NotSupported(path.Child("podReplacementPolicy"), *p,
				[]batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed}))
		}
	}
	return errs
}

// jobSpecChecks are the checks of a Job's spec a CronJob's job template
// gets too (kube's validateJobSpec).
func jobSpecChecks(s *batchv1.JobSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, f := range []struct {
		v    *int32
		name string
	}{{s.Parallelism, "parallelism"}, {s.Completions, "completions"}} {
		if f.v != nil {
			errs = append(errs, apiserver.NonNegative(*f.v, path.Child(f.name))...)
		}
	}
	if s.ActiveDeadlineSeconds != nil {
		errs = append(errs, apiserver.NonNegative(*s.ActiveDeadlineSeconds, path.Child("activeDeadlineSeconds"))...)
	}
	for _, f := range []struct {
		v    *int32
		name string
	}{{s.BackoffLimit, "backoffLimit"}, {s.TTLSecondsAfterFinished, "ttlSecondsAfterFinished"},
		{s.BackoffLimitPerIndex, "backoffLimitPerIndex"}, {s.MaxFailedIndexes, "maxFailedIndexes"}} {
		if f.v != nil {
			errs = append(errs, apiserver.NonNegative(*f.v, path.Child(f.name))...)
		}
	}
	if s.MaxFailedIndexes != nil && s.BackoffLimitPerIndex == nil {
		errs = append(errs, field.Required(path.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
	}
	errs = append(errs, jobCompletionModeChecks(s, path)...)
	errs = append(errs, jobPodReplacementChecks(s, path)...)
	tp := path.Child("template")
	errs = append(errs, core.ValidatePodTemplate(&s.Template, tp)...)
	rp := tp.Child("spec", "restartPolicy")
	switch r := s.Template.Spec.RestartPolicy; {
	case r == corev1.RestartPolicyAlways || r == "":
		errs = append(errs, field.Required(rp, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)))
	case r != corev1.RestartPolicyOnFailure && r != corev1.RestartPolicyNever:
		errs = append(errs, field.NotSupported(rp, r, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever}))
	case s.PodFailurePolicy != nil && r != corev1.RestartPolicyNever:
		errs = append(errs, field.Invalid(rp, r, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever)))
	}
	return errs
}

// nameAllowsCompletions: an Indexed Job's last pod hostname, name-index,
// must be a DNS label.
func nameAllowsCompletions(j *batchv1.Job) field.ErrorList {
	s := j.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || s.Completions == nil || *s.Completions <= 0 {
		return nil
	}
	host := fmt.Sprintf("%s-%d", j.Name, *s.Completions-1)
	if len(apivalidation.NameIsDNSLabel(host, false)) > 0 {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), j.Name,
			"will not able to create pod with invalid DNS label: "+host)}
	}
	return nil
}

// validateJobUpdate: a Job's completions (unless Indexed, and then only
// with parallelism), selector, template, completion mode and failure and
// success policies do not change.
func validateJobUpdate(obj, old runtime.Object) field.ErrorList {
	s, o := obj.(*batchv1.Job).Spec, old.(*batchv1.Job).Spec
	path := field.NewPath("spec")
	var errs field.ErrorList
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		errs = apivalidation.ValidateImmutableField(s.Completions, o.Completions, path.Child("completions"))
	} else if !apiequality.Semantic.DeepEqual(s.Completions, o.Completions) && s.Completions != nil && *s.Completions != ptr.Deref(s.Parallelism, 0) {
		errs = append(errs, field.Invalid(path.Child("completions"), s.Completions, "can only be modified in tandem with spec.parallelism"))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(s.Selector, o.Selector, path.Child("selector"))...)
	errs = append(errs, jobTemplateUpdate(&s.Template, &o.Template, ptr.Deref(o.Suspend, false), path.Child("template"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(s.CompletionMode, o.CompletionMode, path.Child("completionMode"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(s.PodFailurePolicy, o.PodFailurePolicy, path.Child("podFailurePolicy"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(s.BackoffLimitPerIndex, o.BackoffLimitPerIndex, path.Child("backoffLimitPerIndex"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(s.ManagedBy, o.ManagedBy, path.Child("managedBy"))...)
	return append(errs, apivalidation.ValidateImmutableField(s.SuccessPolicy, o.SuccessPolicy, path.Child("successPolicy"))...)
}

// jobTemplateUpdate: the template does not change, but for the scheduling
// directives (node affinity, node selector, tolerations, labels,
// annotations, scheduling gates) of a suspended Job.
func jobTemplateUpdate(t, o *corev1.PodTemplateSpec, suspended bool, path *field.Path) field.ErrorList {
	if suspended {
		o = o.DeepCopy()
		switch {
		case t.Spec.Affinity == nil && o.Spec.Affinity != nil:
			o.Spec.Affinity.NodeAffinity = nil
			if *o.Spec.Affinity == (corev1.Affinity{}) {
				o.Spec.Affinity = nil
			}
		case t.Spec.Affinity != nil && o.Spec.Affinity == nil:
			o.Spec.Affinity = &corev1.Affinity{NodeAffinity: t.Spec.Affinity.NodeAffinity}
		case t.Spec.Affinity != nil && o.Spec.Affinity != nil:
			o.Spec.Affinity.NodeAffinity = t.Spec.Affinity.NodeAffinity
		}
		o.Spec.NodeSelector, o.Spec.Tolerations, o.Spec.SchedulingGates = t.Spec.NodeSelector, t.Spec.Tolerations, t.Spec.SchedulingGates
		o.Annotations, o.Labels = t.Annotations, t.Labels
	}
	return apivalidation.ValidateImmutableField(t, o, path)
}

// validateJobStatus checks the counts a Job's status holds.
func validateJobStatus(obj, _ runtime.Object) field.ErrorList {
	st := obj.(*batchv1.Job).Status
	path := field.NewPath("status")
	var errs field.ErrorList
	for _, c := range []struct {
		name string
		n    *int32
	}{{"active", &st.Active}, {"succeeded", &st.Succeeded}, {"failed", &st.Failed}, {"ready", st.Ready}, {"terminating", st.Terminating}} {
		if c.n != nil {
			errs = append(errs, apiserver.NonNegative(*c.n, path.Child(c.name))...)
		}
	}
	return errs
}

func resetJobStatus(obj, old runtime.Object) {
	j := obj.(*batchv1.Job)
	j.Status = batchv1.JobStatus{}
	if old != nil {
		j.Status = old.(*batchv1.Job).Status
	}
}

// Jobs can be selected by the pods their status counts as succeeded.
func jobFields(obj runtime.Object, set fields.Set) {
	set["status.successful"] = strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))
}

// jobWarnings: on a create a name that is not a DNS label; on a create and
// on an update that changes the spec, an Indexed Job too big to track its
// indexes and the pod template's warnings.
func jobWarnings(obj, old runtime.Object) []string {
	j := obj.(*batchv1.Job)
	var w []string
	if old == nil {
		w = dnsLabelNameWarning(j.Name)
	} else if apiequality.Semantic.DeepEqual(j.Spec, old.(*batchv1.Job).Spec) {
		return nil
	}
	return append(w, jobSpecWarnings(&j.Spec, field.NewPath("spec"))...)
}

// jobSpecWarnings is kube's WarningsForJobSpec, for a Job's spec or a
// CronJob's job template's.
func jobSpecWarnings(s *batchv1.JobSpec, path *field.Path) []string {
	var w []string
	if s.CompletionMode != nil && *s.CompletionMode == batchv1.IndexedCompletion && ptr.Deref(s.Completions, 0) > 100000 && ptr.Deref(s.Parallelism, 0) > 10000 {
		w = append(w, path.String()+": In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, "+
			"Kubernetes might not be able to track completedIndexes when a big number of indexes fail")
	}
	for _, t := range core.PodTemplateWarnings(&s.Template) {
		w = append(w, strings.Replace(t, "spec.template.", path.Child("template").String()+".", 1))
	}
	return w
}

// dnsLabelNameWarning warns about the name of a Job or CronJob that is not
// a DNS label: its pods' names and hostnames come from it.
func dnsLabelNameWarning(name string) []string {
	if msgs := validation.IsDNS1123Label(name); len(msgs) != 0 {
		return []string{fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs)}
	}
	return nil
}

// jobTable has kube's columns for Jobs: the status from the conditions,
// the completions, how long the Job ran.
var jobTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Status", Type: "string", Description: "Status of the job."},
		{Name: "Completions", Type: "string", Description: batchv1.JobStatus{}.SwaggerDoc()["succeeded"]},
		{Name: "Duration", Type: "string", Description: "Time required to complete the job."},
		apiserver.AgeColumn, core.ContainersColumn, core.ImagesColumn,
		{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]}},
	Cells: func(obj runtime.Object, now time.Time) []any {
		j := obj.(*batchv1.Job)
		names, images := core.ContainerCells(j.Spec.Template.Spec.Containers)
		return []any{j.Name, jobStatus(j), jobCompletions(j), jobDuration(j, now), apiserver.Age(j.CreationTimestamp, now),
			names, images, metav1.FormatLabelSelector(j.Spec.Selector)}
	},
}

func jobCompletions(j *batchv1.Job) string {
	if j.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	}
	if p := ptr.Deref(j.Spec.Parallelism, 0); p > 1 {
		return fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, p)
	}
	return fmt.Sprintf("%d/1", j.Status.Succeeded)
}

func jobDuration(j *batchv1.Job, now time.Time) string {
	switch st := j.Status; {
	case st.StartTime == nil:
		return ""
	case st.CompletionTime == nil:
		return duration.HumanDuration(now.Sub(st.StartTime.Time))
	default:
		return duration.HumanDuration(st.CompletionTime.Sub(st.StartTime.Time))
	}
}

func jobStatus(j *batchv1.Job) string {
	has := func(t batchv1.JobConditionType) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == t {
				return c.Status == corev1.ConditionTrue
			}
		}
		return false
	}
	switch {
	case has(batchv1.JobComplete):
		return "Complete"
	case has(batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case has(batchv1.JobSuspended):
		return "Suspended"
	case has(batchv1.JobFailureTarget):
		return "FailureTarget"
	case has(batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}
