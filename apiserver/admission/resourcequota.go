package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubequota "k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	quota "k8s.io/apiserver/pkg/quota/v1"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/internal/quotaeval"
	"github.com/kubegate/kubegate/store"
)

var resourceQuotasGVR = corev1.SchemeGroupVersion.WithResource("resourcequotas")

// ResourceQuota is kube-apiserver's ResourceQuota plugin (D.14): a write
// in a namespace that has ResourceQuotas is checked against each quota
// that limits what it uses, with k8s.io/apiserver's CheckRequest and the
// evaluators of quotaevaluators.go (pods, services, persistent volume
// claims; object counts, count/RESOURCE.GROUP, for everything else):
//   - a quota whose status does not yet count a resource it limits
//     refuses the write ("status unknown for quota");
//   - a write that would take status.used above status.hard is refused
//     with kube's 403 "exceeded quota: NAME, requested: ..., used: ...,
//     limited: ...";
//   - otherwise the quotas' status.used is charged, before the object is
//     stored, through the server's status writer (as kube's loopback
//     client, as "kube-apiserver"); a dry run charges nothing.
//
// The plugin serializes its charges, and a charge that loses a race with
// another writer of the quota reads it again and is checked afresh.
func ResourceQuota(st store.Store) apiserver.Admission {
	return &resourceQuota{st: st, evaluators: quotaeval.Evaluators(quotaeval.Options{})}
}

type resourceQuota struct {
	st         store.Store
	evaluators map[schema.GroupResource]quota.Evaluator
	writer     apiserver.StatusWriter
	mu         sync.Mutex
}

var (
	_ apiserver.AdmissionValidator = (*resourceQuota)(nil)
	_ apiserver.WantsStatusWriter  = (*resourceQuota)(nil)
)

func (r *resourceQuota) SetStatusWriter(w apiserver.StatusWriter) { r.writer = w }

// Admit does nothing: the plugin only validates.
func (*resourceQuota) Admit(context.Context, *apiserver.AdmissionAttributes) error { return nil }

// quotaRetries is how often a charge that conflicted is tried again.
const quotaRetries = 3

// Validate checks the write against its namespace's quotas and charges
// them.
func (r *resourceQuota) Validate(ctx context.Context, a *apiserver.AdmissionAttributes) error {
	gr := a.Resource.GroupResource()
	if a.Namespace == "" || a.Object == nil || quotaeval.Ignored[gr] || (a.Operation == apiserver.Create && gr == namespacesGVR.GroupResource()) {
		return nil
	}
	ev := r.evaluators[gr]
	if ev == nil {
		ev = quotaeval.ObjectCount(gr, nil)
	}
	copied := *a
	copied.Object = a.Object.DeepCopyObject()
	if a.OldObject != nil {
		copied.OldObject = a.OldObject.DeepCopyObject()
	}
	copied.Shared = nil
	attrs := KubeAttributes(&copied)
	if !ev.Handles(attrs) {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for try := 0; ; try++ {
		quotas, err := r.quotas(ctx, a.Namespace)
		if err != nil || len(quotas) == 0 {
			return err
		}
		charged, err := kubequota.CheckRequest(quotas, attrs, ev, nil)
		if err != nil || a.DryRun {
			return err
		}
		err = r.charge(ctx, quotas, charged)
		if err == nil || !apierrors.IsConflict(err) || try == quotaRetries {
			return err
		}
	}
}

// WithDynamic puts the dynamic plugins (admission policies and webhooks)
// into chain where kube-apiserver runs them: before ResourceQuota, which
// charges only what every other plugin admitted.
func WithDynamic(chain, dynamic []apiserver.Admission) []apiserver.Admission {
	i := slices.IndexFunc(chain, func(a apiserver.Admission) bool { _, ok := a.(*resourceQuota); return ok })
	if i < 0 {
		return append(slices.Clone(chain), dynamic...)
	}
	out := append(slices.Clone(chain[:i]), dynamic...)
	return append(out, chain[i:]...)
}

// quotas reads the namespace's ResourceQuotas from the store, with their
// resourceVersions.
func (r *resourceQuota) quotas(ctx context.Context, namespace string) ([]corev1.ResourceQuota, error) {
	res, err := r.st.List(ctx, apiserver.Key(resourceQuotasGVR, namespace, ""), store.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]corev1.ResourceQuota, 0, len(res.KVs))
	for _, kv := range res.KVs {
		var q corev1.ResourceQuota
		if err := apiserver.UnmarshalStored(kv.Value, &q); err != nil {
			return nil, err
		}
		q.ResourceVersion = strconv.FormatInt(kv.ModRevision, 10)
		out = append(out, q)
	}
	return out, nil
}

// charge writes the status of each quota whose usage CheckRequest
// changed.
func (r *resourceQuota) charge(ctx context.Context, before, after []corev1.ResourceQuota) error {
	for i := range after {
		if quota.Equals(before[i].Status.Used, after[i].Status.Used) {
			continue
		}
		if r.writer == nil {
			return apierrors.NewInternalError(errors.New("resource quota admission has no status writer"))
		}
		if _, err := r.writer.UpdateStatus(ctx, resourceQuotasGVR, &after[i]); err != nil {
			if apierrors.IsConflict(err) || storeFault(err) {
				return err
			}
			return apierrors.NewInternalError(fmt.Errorf("charge quota %s: %w", after[i].Name, err))
		}
	}
	return nil
}
