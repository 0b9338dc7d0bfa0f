package admission

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/store"
)

// Priority is kube-apiserver's Priority plugin (D.11):
//   - a new pod gets the priority and preemption policy of its
//     priorityClassName, or of the global default class when it names
//     none (0 and PreemptLowerPriority when there is none); a class that
//     does not exist, or a priority or policy in the pod that differs from
//     the class's, is 403;
//   - an update keeps the priority the pod has;
//   - only one class may be the global default (403). (The system classes
//     are protected from deletion by the API server itself.)
func Priority(st store.Store) apiserver.Admission {
	r := &reads{st: st}
	return withReads{r, func(ctx context.Context, a *apiserver.AdmissionAttributes) error {
		if a.Subresource != "" {
			return nil
		}
		switch a.Resource {
		case podsGVR:
			return admitPodPriority(ctx, r, a)
		case apiserver.PriorityClassesGVR:
			return admitPriorityClass(ctx, r, a)
		}
		return nil
	}}
}

func admitPodPriority(ctx context.Context, r *reads, a *apiserver.AdmissionAttributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	if a.Operation == apiserver.Update {
		old, ok := a.OldObject.(*corev1.Pod)
		if !ok {
			return nil
		}
		if pod.Spec.Priority == nil {
			pod.Spec.Priority = old.Spec.Priority
		}
		if pod.Spec.PreemptionPolicy == nil {
			pod.Spec.PreemptionPolicy = old.Spec.PreemptionPolicy
		}
		return nil
	}
	if a.Operation != apiserver.Create {
		return nil
	}
	name, priority, policy := "", int32(0), corev1.PreemptLowerPriority
	var pc *schedulingv1.PriorityClass
	var err error
	if pod.Spec.PriorityClassName == "" {
		pc, err = r.globalDefault(ctx)
	} else if pc, err = r.priorityClass(ctx, pod.Spec.PriorityClassName); errors.Is(err, store.ErrNotFound) {
		return apierrors.NewForbidden(podsGVR.GroupResource(), a.Name, fmt.Errorf("no PriorityClass with name %s was found", pod.Spec.PriorityClassName))
	}
	if err != nil {
		return err
	}
	if pc != nil {
		name, priority = pc.Name, pc.Value
		if pc.PreemptionPolicy != nil {
			policy = *pc.PreemptionPolicy
		}
	}
	pod.Spec.PriorityClassName = name
	if p := pod.Spec.Priority; p != nil && *p != priority {
		return apierrors.NewForbidden(podsGVR.GroupResource(), a.Name, fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *p, priority))
	}
	pod.Spec.Priority = &priority
	if p := pod.Spec.PreemptionPolicy; p != nil && *p != policy {
		return apierrors.NewForbidden(podsGVR.GroupResource(), a.Name, fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *p, policy))
	}
	pod.Spec.PreemptionPolicy = &policy
	return nil
}

func admitPriorityClass(ctx context.Context, r *reads, a *apiserver.AdmissionAttributes) error {
	gr := apiserver.PriorityClassesGVR.GroupResource()
	switch a.Operation {
	case apiserver.Create, apiserver.Update:
		pc, ok := a.Object.(*schedulingv1.PriorityClass)
		if !ok || !pc.GlobalDefault {
			return nil
		}
		def, err := r.globalDefault(ctx)
		if err != nil {
			return err
		}
		if def != nil && def.Name != pc.Name {
			return apierrors.NewForbidden(gr, a.Name, fmt.Errorf("PriorityClass %s is already marked as default. Only one default can exist", def.Name))
		}
	}
	return nil
}

// priorityClass reads a priority class; a missing one is store.ErrNotFound.
func (r *reads) priorityClass(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
	if r.lister != nil {
		return r.lister.GetPriorityClass(ctx, name)
	}
	pc := &schedulingv1.PriorityClass{}
	if err := getStored(ctx, r.st, apiserver.Key(apiserver.PriorityClassesGVR, "", name), pc); err != nil {
		return nil, err
	}
	return pc, nil
}

// globalDefault returns the class marked globalDefault (the lowest, should
// several be), or nil.
func (r *reads) globalDefault(ctx context.Context) (*schedulingv1.PriorityClass, error) {
	var def *schedulingv1.PriorityClass
	if r.lister != nil {
		for _, pc := range r.lister.PriorityClasses() {
			if pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
				def = pc
			}
		}
		return def, nil
	}
	st := r.st
	opts := store.ListOptions{}
	for {
		page, err := st.List(ctx, apiserver.Key(apiserver.PriorityClassesGVR, "", ""), opts)
		if err != nil {
			return nil, err
		}
		for _, kv := range page.KVs {
			var pc schedulingv1.PriorityClass
			if err := apiserver.UnmarshalStored(kv.Value, &pc); err != nil {
				return nil, err
			}
			if pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
				def = &pc
			}
		}
		if !page.More || len(page.KVs) == 0 {
			return def, nil
		}
		opts.Revision, opts.Continue = page.Revision, page.KVs[len(page.KVs)-1].Key
	}
}
