package core

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	pdbhelpers "k8s.io/component-helpers/apps/poddisruptionbudget"

	"github.com/kubegate/kubegate/apiserver"
)

// The eviction subresource (D.9): a pod is deleted only when the
// PodDisruptionBudget that covers it allows one more disruption, which
// the eviction then uses up by recording the pod in the budget's
// status.disruptedPods until the disruption controller sees it gone
// (G.12).

// maxDisruptedPods is how many evictions a budget may hold that the
// disruption controller has not yet confirmed; beyond it evictions are
// refused.
const maxDisruptedPods = 2000

// evictionRetries bounds the retries of a write that conflicts with
// another writer.
const evictionRetries = 20

// evictionManager owns, in managedFields, what an eviction writes in a
// budget's status: kube-apiserver's own client writes it there.
const evictionManager = "kube-apiserver"

var pdbGVR = policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")

// evictionMessage is kube's refusal of an eviction the budget does not
// allow.
const evictionMessage = "Cannot evict pod as it would violate the pod's disruption budget."

// evict serves POST pods/NAME/eviction and answers 201 with a success
// Status once the pod is deleted (or marked deleting).
func evict(req *apiserver.Request, _ string) error {
	info, data, err := req.Body()
	if err != nil {
		return err
	}
	// policy/v1 and the older policy/v1beta1 are both accepted.
	def := policyv1.SchemeGroupVersion.WithKind("Eviction")
	obj, _, err := info.Serializer.Decode(data, &def, nil)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf: %v", err))
	}
	if _, _, ok := evictionFields(obj); !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("%s is not an Eviction", obj.GetObjectKind().GroupVersionKind()))
	}
	if err := req.CheckNamespaceActive(podsGVR.GroupResource(), req.Name()); err != nil {
		return err // admission's answer comes first (G.9)
	}
	kind := obj.GetObjectKind().GroupVersionKind()
	if kind.Empty() {
		kind = def
	}
	if err := req.Admit(apiserver.Create, req.Name(), kind, obj); err != nil {
		return err
	}
	name, opts, _ := evictionFields(obj) // as admission left them
	if name != req.Name() {
		return apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	if opts != nil && opts.IgnoreStoreReadErrorWithClusterBreakingPotential != nil && *opts.IgnoreStoreReadErrorWithClusterBreakingPotential {
		return apierrors.NewInvalid(policyv1.SchemeGroupVersion.WithKind("Eviction").GroupKind(), name, field.ErrorList{
			field.Invalid(field.NewPath("deleteOptions", "ignoreStoreReadErrorWithClusterBreakingPotential"), true,
				"can not be set for pod eviction, try after removing the option")})
	}
	if _, err := req.DryRun(); err != nil {
		return err
	}
	_, r := req.HTTP()
	if opts, err = evictionDryRun(opts, r.URL.Query()["dryRun"]); err != nil {
		return err
	}
	if err := apiserver.CheckDeleteOptions(opts); err != nil {
		return err
	}
	st, err := evictPod(req, opts)
	if err != nil {
		return err
	}
	if st != nil {
		// answered as an object, with the code it carries
		req.Write(int(st.Code), st)
		return nil
	}
	req.WriteCreated()
	return nil
}

// evictionFields returns the pod an Eviction of either version names and
// its delete options; ok false: obj is no Eviction.
func evictionFields(obj runtime.Object) (name string, opts *metav1.DeleteOptions, ok bool) {
	switch ev := obj.(type) {
	case *policyv1.Eviction:
		return ev.Name, ev.DeleteOptions, true
	case *policyv1beta1.Eviction:
		return ev.Name, ev.DeleteOptions, true
	}
	return "", nil, false
}

// evictionDryRun merges the dry run asked on the URL into the eviction's
// delete options; the two may not ask different things.
func evictionDryRun(opts *metav1.DeleteOptions, urlDryRun []string) (*metav1.DeleteOptions, error) {
	if opts == nil {
		return &metav1.DeleteOptions{DryRun: urlDryRun}, nil
	}
	opts = opts.DeepCopy()
	switch {
	case len(opts.DryRun) == 0:
		opts.DryRun = urlDryRun
	case len(urlDryRun) > 0 && !slices.Equal(opts.DryRun, urlDryRun):
		// kube answers this as an error of no known kind: a 500 with
		// no reason
		return nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: fmt.Sprintf("Non-matching dry-run options in request and content: %v and %v", urlDryRun, opts.DryRun)}}
	}
	return opts, nil
}

// evictPod evicts the pod of the request with opts: a pod that is not
// running (pending, finished) or already deleting goes at once; any
// other is checked against the budget that covers it. A non-nil Status is
// a failure answered as an object rather than an error, as kube answers
// a pod with more than one budget.
func evictPod(req *apiserver.Request, opts *metav1.DeleteOptions) (*metav1.Status, error) {
	userRV := opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil
	var pod *corev1.Pod
	for attempt := 0; ; attempt++ {
		p, err := readPod(req)
		if err != nil {
			return nil, err
		}
		pod = p
		if !evictsFreely(pod) {
			break
		}
		del := opts
		if pod.Status.Phase == corev1.PodPending && pod.DeletionTimestamp == nil && !userRV {
			// A pending pod may become ready meanwhile: delete it only as read.
			del = withResourceVersion(opts, pod.ResourceVersion)
		}
		err = markAndDeletePod(req, del)
		if err == nil {
			return nil, nil
		}
		if !apierrors.IsConflict(err) || userRV || attempt == evictionRetries {
			return nil, err
		}
	}

	pdbs, err := budgetsOf(req, pod)
	if err != nil {
		return nil, err
	}
	if len(pdbs) > 1 {
		return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}, nil
	}
	if len(pdbs) == 0 {
		return nil, markAndDeletePod(req, opts)
	}
	pdb := pdbs[0]
	if !podReady(pod) {
		policy := pdb.Spec.UnhealthyPodEvictionPolicy
		if policy != nil && *policy == policyv1.AlwaysAllow ||
			pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0 {
			// An unready pod does not count as healthy: it goes without
			// using the budget, provided it is still the pod just read.
			err := markAndDeletePod(req, withResourceVersion(opts, pod.ResourceVersion))
			if apierrors.IsConflict(err) && !userRV {
				return nil, stillProcessing(pdb.Name)
			}
			return nil, err
		}
	}
	if err := useDisruption(req, pod, pdb, len(opts.DryRun) > 0); err != nil {
		return nil, err
	}
	return nil, markAndDeletePod(req, opts)
}

// evictsFreely reports whether a pod may go without consulting a budget:
// it has finished, has not started, or is already being deleted.
func evictsFreely(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed, corev1.PodPending:
		return true
	}
	return pod.DeletionTimestamp != nil
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func withResourceVersion(opts *metav1.DeleteOptions, rv string) *metav1.DeleteOptions {
	opts = opts.DeepCopy()
	if opts.Preconditions == nil {
		opts.Preconditions = &metav1.Preconditions{}
	}
	opts.Preconditions.ResourceVersion = &rv
	return opts
}

func readPod(req *apiserver.Request) (*corev1.Pod, error) {
	obj, err := req.Get(podsGVR, req.Namespace(), req.Name())
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

// budgetsOf returns the PodDisruptionBudgets of the pod's namespace whose
// selector matches it; one with a selector that does not parse matches
// nothing.
func budgetsOf(req *apiserver.Request, pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	objs, err := req.List(pdbGVR, pod.Namespace)
	if err != nil {
		return nil, err
	}
	var out []*policyv1.PodDisruptionBudget
	for _, obj := range objs {
		pdb := obj.(*policyv1.PodDisruptionBudget)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out, nil
}

// useDisruption takes one disruption from the budget for the pod: it
// refuses when the budget's status is older than its spec or allows
// none, else records the pod as disrupted (not on a dry run). It reads
// the budget afresh on each attempt, so a conflicting write is retried.
func useDisruption(req *apiserver.Request, pod *corev1.Pod, pdb *policyv1.PodDisruptionBudget, dry bool) error {
	check := func(p *policyv1.PodDisruptionBudget) error {
		if p.Status.ObservedGeneration < p.Generation {
			return stillProcessing(p.Name)
		}
		if p.Status.DisruptionsAllowed < 0 {
			return budgetForbidden(p.Name, "pdb disruptions allowed is negative", "pdb disruptions allowed is negative")
		}
		if len(p.Status.DisruptedPods) > maxDisruptedPods {
			return budgetForbidden(p.Name, "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
				"too many pending evictions not confirmed by PDB controller")
		}
		if p.Status.DisruptionsAllowed == 0 {
			return budgetExhausted(p)
		}
		p.Status.DisruptionsAllowed--
		if p.Status.DisruptionsAllowed == 0 {
			setDisruptionAllowedCondition(p, metav1.NewTime(req.Now().Truncate(time.Second)))
		}
		return nil
	}
	if dry {
		return check(pdb.DeepCopy())
	}
	_, err := req.Update(pdbGVR, pdb.Name, "status", evictionManager, func(old runtime.Object) (runtime.Object, error) {
		p := old.(*policyv1.PodDisruptionBudget)
		if err := check(p); err != nil {
			return nil, err
		}
		if p.Status.DisruptedPods == nil {
			p.Status.DisruptedPods = map[string]metav1.Time{}
		}
		p.Status.DisruptedPods[pod.Name] = metav1.NewTime(req.Now().Truncate(time.Second))
		p.ResourceVersion = ""
		return p, nil
	})
	return err
}

// setDisruptionAllowedCondition sets a budget's DisruptionAllowed
// condition from its status.disruptionsAllowed (G.12) as kube's eviction
// does, by component-helpers' rule: True with reason SufficientPods when
// it allows one, else False with InsufficientPods. The helper takes the
// transition time from the wall clock; kubegate takes now, the server's
// clock, so that a server run on an injected clock writes its time.
func setDisruptionAllowedCondition(pdb *policyv1.PodDisruptionBudget, now metav1.Time) {
	var before metav1.ConditionStatus
	if c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition); c != nil {
		before = c.Status
	}
	pdbhelpers.UpdateDisruptionAllowedCondition(pdb)
	if c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition); c.Status != before {
		c.LastTransitionTime = now
	}
}

// stillProcessing is the refusal while the budget's status does not yet
// reflect its spec; the client is asked to retry in 10 seconds.
func stillProcessing(name string) error {
	err := apierrors.NewTooManyRequests(evictionMessage, 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", name)})
	return err
}

// budgetExhausted is the refusal of a budget that allows no disruption,
// with kube's explanation of why.
func budgetExhausted(p *policyv1.PodDisruptionBudget) error {
	err := apierrors.NewTooManyRequests(evictionMessage, 0)
	c := apimeta.FindStatusCondition(p.Status.Conditions, policyv1.DisruptionAllowedCondition)
	failed := c != nil && c.Status == metav1.ConditionFalse && c.Message != ""
	var msg string
	switch {
	case failed && c.Reason == policyv1.SyncFailedReason:
		msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", p.Name, c.Message)
	case p.Status.CurrentHealthy <= p.Status.DesiredHealthy:
		msg = fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", p.Name, p.Status.DesiredHealthy, p.Status.CurrentHealthy)
	case failed:
		msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", p.Name, c.Reason, c.Message)
	default:
		msg = fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", p.Name)
	}
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: msg})
	return err
}

func budgetForbidden(name, reason, detail string) error {
	err := apierrors.NewForbidden(schema.GroupResource{Group: policyv1.GroupName, Resource: "poddisruptionbudget"}, name, errors.New(reason))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s does not allow evicting pods currently: %s", name, detail)})
	return err
}

// markAndDeletePod gives the pod kube's DisruptionTarget condition (not
// on a dry run), then deletes it with opts. The condition is written only
// to the pod opts' preconditions name, and a resourceVersion precondition
// then follows that write.
func markAndDeletePod(req *apiserver.Request, opts *metav1.DeleteOptions) error {
	if len(opts.DryRun) == 0 {
		kind := schema.GroupResource{Resource: "Pod"}
		obj, err := req.Update(podsGVR, req.Name(), "status", "", func(old runtime.Object) (runtime.Object, error) {
			pod := old.(*corev1.Pod)
			if p := opts.Preconditions; p != nil {
				if p.UID != nil && *p.UID != "" && *p.UID != pod.UID {
					return nil, apierrors.NewConflict(kind, pod.Name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, pod.UID))
				}
				if p.ResourceVersion != nil && *p.ResourceVersion != "" && *p.ResourceVersion != pod.ResourceVersion {
					return nil, apierrors.NewConflict(kind, pod.Name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, pod.ResourceVersion))
				}
			}
			setDisruptionTarget(pod, metav1.NewTime(req.Now().Truncate(time.Second)))
			pod.ResourceVersion = ""
			return pod, nil
		})
		if err != nil {
			return err
		}
		if opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil {
			opts = withResourceVersion(opts, obj.(*corev1.Pod).ResourceVersion)
		}
	}
	return req.Delete(podsGVR, req.Name(), opts)
}

// setDisruptionTarget sets the pod condition DisruptionTarget with the
// eviction API's reason, as kube does before it deletes an evicted pod.
func setDisruptionTarget(pod *corev1.Pod, now metav1.Time) {
	c := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI",
		Message: "Eviction API: evicting", LastTransitionTime: now}
	for i := range pod.Status.Conditions {
		old := &pod.Status.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		*old = c
		return
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}
