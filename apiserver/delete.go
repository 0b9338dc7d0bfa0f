package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/warning"

	"github.com/kubegate/kubegate/store"
)

// deleteOptions reads DeleteOptions from the body (any encoding, any group
// version) or, when there is none, from the query, as kube does: a body's
// options are the only ones. Options kube refuses are a 422 about
// DeleteOptions (D.5).
func (q *request) deleteOptions() (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	data, err := readBody(q.r)
	if err != nil {
		return nil, err
	}
	if len(data) > 0 {
		info, err := q.s.bodyInfo(q.r)
		if err != nil {
			return nil, err
		}
		gvk := coreGV.WithKind("DeleteOptions")
		if _, _, err := info.Serializer.Decode(data, &gvk, opts); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	} else if err := runtime.NewParameterCodec(q.s.scheme).DecodeParameters(q.r.URL.Query(), metav1.SchemeGroupVersion, opts); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return opts, checkDeleteOptions(opts)
}

// checkDeleteOptions validates opts as kube-apiserver does, and raises a
// negative grace period to 1 s, as kube treats it.
func checkDeleteOptions(opts *metav1.DeleteOptions) error {
	if errs := metav1validation.ValidateDeleteOptions(opts); len(errs) > 0 {
		return apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind("DeleteOptions").GroupKind(), "", errs)
	}
	if g := opts.GracePeriodSeconds; g != nil && *g < 0 {
		one := int64(1)
		opts.GracePeriodSeconds = &one
	}
	return nil
}

func (q *request) delete() error {
	if _, err := q.negotiate(acceptOptions{convert: true}); err != nil {
		return err
	}
	opts, err := q.deleteOptions()
	if err != nil {
		return err
	}
	q.warnJobDelete(opts)
	obj, deleted, err := q.deleteOne(q.name, opts)
	if err != nil {
		return err
	}
	// kube answers 202 for an object not yet gone only when the client set
	// orphanDependents to false; a graceful pod deletion is a 200.
	code := http.StatusOK
	//lint:ignore SA1019 kube still reads the deprecated field
	if orphan := opts.OrphanDependents; !deleted && orphan != nil && !*orphan {
		code = http.StatusAccepted
	}
	if deleted {
		obj = q.deletedAnswer(obj)
	}
	return q.respond(code, obj)
}

// deletedAnswer is what a delete that removed obj at once answers (D.7):
// for most kinds a success Status naming it; a pod as kube-apiserver's
// graceful deletion with a zero grace period leaves it; other kinds that
// answer with the object (namespaces, services) as it was.
func (q *request) deletedAnswer(obj runtime.Object) runtime.Object {
	acc, _ := meta.Accessor(obj)
	if !q.res.ReturnDeleted {
		return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess,
			Details: &metav1.StatusDetails{Name: acc.GetName(), Group: q.res.GVR.Group, Kind: q.res.GVR.Resource, UID: acc.GetUID()}}
	}
	if o, ok := obj.(*corev1.Pod); ok {
		now := metav1.NewTime(q.s.now().Truncate(time.Second))
		zero := int64(0)
		ts := now
		if o.DeletionTimestamp == nil {
			if o.Generation > 0 {
				o.Generation++
			}
		} else if o.DeletionGracePeriodSeconds != nil {
			// The deletion moves forward by the grace period it had.
			if t := metav1.NewTime(o.DeletionTimestamp.Add(-time.Duration(*o.DeletionGracePeriodSeconds) * time.Second)); now.Before(&t) {
				ts = t
			}
		}
		o.DeletionTimestamp, o.DeletionGracePeriodSeconds = &ts, &zero
	}
	return obj
}

// deleteOne deletes the object name, or marks it deleting when finalizers
// or a graceful pod shutdown are pending (deleted false).
func (q *request) deleteOne(name string, opts *metav1.DeleteOptions) (runtime.Object, bool, error) {
	if q.res.Undeletable != nil {
		// refused here, so that no path (delete, deletecollection,
		// eviction) removes a system object
		if err := q.res.Undeletable(name); err != nil {
			return nil, false, apierrors.NewForbidden(q.gr(), name, err)
		}
	}
	key := q.key(name)
	dry := len(opts.DryRun) > 0
	for {
		kv, err := q.s.cfg.Store.Get(q.ctx(), key)
		if err != nil {
			return nil, false, storeErr(err, q.gr(), name)
		}
		old, err := q.s.decodeKV(q.res, kv)
		if err != nil {
			return nil, false, err
		}
		if err := q.checkDeletePreconditions(name, opts.Preconditions, old); err != nil {
			return nil, false, err
		}
		attrs := &AdmissionAttributes{Operation: Delete, Resource: q.res.GVR, Kind: q.res.gvk(), Namespace: q.ns,
			Name: name, User: q.user(), OldObject: old, DryRun: dry, Options: opts}
		if err := q.s.admit(q.ctx(), attrs); err != nil {
			return nil, false, err
		}
		if err := q.s.validateAdmission(q.ctx(), attrs); err != nil {
			return nil, false, err
		}
		if ns, ok := old.(*corev1.Namespace); ok {
			if ns.DeletionTimestamp == nil {
				marked, retry, err := q.startNamespaceTermination(name, kv, ns, opts, dry)
				if retry {
					continue
				}
				return marked, false, err
			}
			if len(ns.Spec.Finalizers) > 0 {
				return old, false, nil // still being emptied
			}
		}
		if acc, _ := meta.Accessor(old); q.res.BeginDelete != nil && q.verb != "deletecollection" && acc.GetDeletionTimestamp() == nil {
			marked := old.DeepCopyObject()
			q.res.BeginDelete(marked, q.s.now())
			out, retry, err := q.storeMarked(name, kv, marked, old, dry)
			if retry {
				continue
			}
			return out, false, err
		}
		if marked, ok := q.s.markDeleting(q, old, opts); ok {
			out, retry, err := q.storeMarked(name, kv, marked, old, dry)
			if retry {
				continue
			}
			return out, false, err
		}
		if dry {
			return old, true, nil
		}
		_, _, err = q.s.cfg.Store.Delete(q.ctx(), key, kv.ModRevision)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, false, storeErr(err, q.gr(), name)
		}
		q.s.released(q.ctx(), q.res, old)
		return old, true, nil
	}
}

// checkDeletePreconditions refuses a delete whose preconditions old does
// not meet, with kube's Conflict.
func (q *request) checkDeletePreconditions(name string, p *metav1.Preconditions, old runtime.Object) error {
	if p == nil {
		return nil
	}
	if q.res.DeletePreconditions != nil && q.verb != "deletecollection" {
		return q.res.DeletePreconditions(p, old)
	}
	acc, _ := meta.Accessor(old)
	if q.res.GVR == namespacesGVR {
		// The namespace registry checks its preconditions itself, naming
		// the resource (G.9).
		if p.UID != nil && *p.UID != acc.GetUID() {
			return apierrors.NewConflict(q.gr(), name, preconditionErr("UID", *p.UID, acc.GetUID()))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != acc.GetResourceVersion() {
			return apierrors.NewConflict(q.gr(), name, preconditionErr("ResourceVersion", *p.ResourceVersion, acc.GetResourceVersion()))
		}
		return nil
	}
	// kube names the kind, not the resource, in these conflicts.
	kind := schema.GroupResource{Group: q.res.GVR.Group, Resource: q.res.Kind}
	if p.UID != nil && *p.UID != acc.GetUID() {
		return apierrors.NewConflict(kind, name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, acc.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != acc.GetResourceVersion() {
		return apierrors.NewConflict(kind, name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, acc.GetResourceVersion()))
	}
	return nil
}

// startNamespaceTermination serves the first delete of a namespace: it
// is marked Terminating with its deletion time (G.9), and the namespace
// controller empties it. retry: written meanwhile.
func (q *request) startNamespaceTermination(name string, kv store.KV, ns *corev1.Namespace, opts *metav1.DeleteOptions, dry bool) (_ runtime.Object, retry bool, _ error) {
	marked := ns.DeepCopy()
	now := metav1.NewTime(q.s.now().Truncate(time.Second))
	marked.DeletionTimestamp = &now
	marked.Status.Phase = corev1.NamespaceTerminating
	marked.Finalizers = namespaceFinalizers(ns.Finalizers, opts)
	if dry {
		return marked, false, nil
	}
	if retry, err := q.replaceStored(name, kv, marked); retry || err != nil {
		return nil, retry, err
	}
	q.s.terminating.Store(name, struct{}{})
	return marked, false, nil
}

// storeMarked stores an object marked for deletion in place of old,
// stored as kv; one that was marked already is answered as stored.
// retry: written meanwhile.
func (q *request) storeMarked(name string, kv store.KV, marked, old runtime.Object, dry bool) (_ runtime.Object, retry bool, _ error) {
	if dry {
		return marked, false, nil
	}
	if bytesEqual, err := q.sameStored(marked, kv); err != nil || bytesEqual {
		return old, false, err
	}
	if retry, err := q.replaceStored(name, kv, marked); retry || err != nil {
		return nil, retry, err
	}
	return marked, false, nil
}

// replaceStored writes obj over the object stored as kv and sets the
// revision written as its resourceVersion. retry: written meanwhile.
func (q *request) replaceStored(name string, kv store.KV, obj runtime.Object) (retry bool, _ error) {
	data, err := q.s.encodeStored(q.res, obj)
	if err != nil {
		return false, err
	}
	rev, err := q.s.cfg.Store.Update(q.ctx(), q.key(name), data, kv.ModRevision)
	if errors.Is(err, store.ErrConflict) {
		return true, nil
	}
	if err != nil {
		return false, storeErr(err, q.gr(), name)
	}
	setResourceVersion(obj, rev)
	return false, nil
}

// warnJobDelete warns that a delete of Jobs naming no propagation policy
// leaves their pods (G.8).
func (q *request) warnJobDelete(opts *metav1.DeleteOptions) {
	//lint:ignore SA1019 kube still reads the deprecated field
	if q.res.GVR == JobsGVR && opts.PropagationPolicy == nil && opts.OrphanDependents == nil {
		warning.AddWarning(q.ctx(), "", jobDeleteWarning)
	}
}

func (q *request) sameStored(obj runtime.Object, kv store.KV) (bool, error) {
	data, err := q.s.encodeStored(q.res, obj)
	return string(data) == string(kv.Value), err
}

// markDeleting returns old marked for deletion, and true, when it must
// not go at once: it keeps finalizers (its own, or the orphan or
// foregroundDeletion finalizer the delete's propagation policy adds, G.8),
// or it is a pod on an existing node that gets a grace period to stop (the
// node agent then deletes it with gracePeriodSeconds=0). A pod already
// stopping is left as it is unless the delete shortens its grace period.
func (s *Server) markDeleting(q *request, old runtime.Object, opts *metav1.DeleteOptions) (runtime.Object, bool) {
	acc, _ := meta.Accessor(old)
	grace := s.podGrace(q, old, opts)
	deleting := acc.GetDeletionTimestamp() != nil
	if deleting {
		if cur := acc.GetDeletionGracePeriodSeconds(); cur == nil || *cur == 0 {
			grace = 0 // its grace period is over: only finalizers can hold it
		} else if *cur <= grace {
			return old, true // already stopping, and no shorter grace asked
		}
	}
	finalizers, changed := gcFinalizers(q.res.GC, acc.GetFinalizers(), opts)
	if grace == 0 && len(finalizers) == 0 {
		return nil, false
	}
	marked := old.DeepCopyObject()
	macc, _ := meta.Accessor(marked)
	if changed {
		macc.SetFinalizers(finalizers)
	}
	if !deleting && macc.GetGeneration() > 0 {
		// controllers see a deletion starting as a change (D.1)
		macc.SetGeneration(macc.GetGeneration() + 1)
	}
	now := s.now()
	ts := metav1.NewTime(now.Add(time.Duration(grace) * time.Second).Truncate(time.Second))
	if grace == 0 && deleting && !acc.GetDeletionTimestamp().After(now) {
		ts = *acc.GetDeletionTimestamp() // an earlier deletion keeps its time
	}
	macc.SetDeletionTimestamp(&ts)
	macc.SetDeletionGracePeriodSeconds(&grace)
	return marked, true
}

// podGrace is the grace period a delete gives obj: 0 unless it is a pod
// still running on a node that exists.
func (s *Server) podGrace(q *request, obj runtime.Object, opts *metav1.DeleteOptions) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return 0
	}
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	if opts.GracePeriodSeconds != nil {
		grace = *opts.GracePeriodSeconds
	}
	if grace <= 0 {
		return 0
	}
	if _, err := s.cfg.Store.Get(q.ctx(), Key(coreGV.WithResource("nodes"), "", pod.Spec.NodeName)); err != nil {
		return 0 // no node will finish it
	}
	return grace
}

// gracefulPending reports whether obj is a pod whose grace period the node
// agent has yet to end.
func (s *Server) gracefulPending(res *Resource, obj runtime.Object) bool {
	pod, ok := obj.(*corev1.Pod)
	return ok && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds > 0
}

func (q *request) deleteCollection() error {
	if _, err := q.negotiate(acceptOptions{convert: true}); err != nil {
		return err
	}
	opts, err := q.deleteOptions()
	if err != nil {
		return err
	}
	sel, err := q.selectors()
	if err != nil {
		return err
	}
	q.warnJobDelete(opts)
	res, err := q.s.cfg.Store.List(q.ctx(), q.listPrefix(), store.ListOptions{})
	if err != nil {
		return storeErr(err, q.gr(), "")
	}
	var items []runtime.Object
	for _, kv := range res.KVs {
		obj, err := q.s.decodeKV(q.res, kv)
		if err != nil {
			return err
		}
		if !sel.matches(q.res, obj) {
			continue
		}
		acc, _ := meta.Accessor(obj)
		one := *q
		one.ns = acc.GetNamespace()
		deleted, _, err := one.deleteOne(acc.GetName(), opts)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return err
		}
		items = append(items, deleted)
	}
	list, err := q.s.newList(q.res, items, res.Revision, "")
	if err != nil {
		return err
	}
	return q.respond(http.StatusOK, list)
}

// preconditionErr is kube's message for a failed delete or binding
// precondition.
func preconditionErr(field string, want, got any) error {
	return fmt.Errorf("%s: %s in precondition: %v, %s in object meta: %v", "Precondition failed", field, want, field, got)
}

// released gives back what obj, just deleted, held (D.6).
func (s *Server) released(ctx context.Context, res *Resource, obj runtime.Object) {
	if res.Release != nil {
		a := s.svcAlloc.begin(ctx, false)
		res.Release(a, obj)
		a.finish(true)
	}
}
