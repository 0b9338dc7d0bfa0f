package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The namespace lifecycle (G.9): no new content in a namespace being
// deleted, and a namespace being deleted that is left with no finalizers
// goes, as it may once an update of its finalize subresource (defined
// with the namespaces in apiserver/registry/core as their
// SpecSubresource) has taken its spec.finalizers.

// namespaceFinalizing reports whether obj is a namespace whose
// spec.finalizers still hold it (G.9).
func namespaceFinalizing(obj any) bool {
	ns, ok := obj.(*corev1.Namespace)
	return ok && len(ns.Spec.Finalizers) > 0
}

// checkNamespaceActive refuses new content in a namespace being
// terminated, as kube-apiserver's NamespaceLifecycle plugin does (G.9):
// 403 naming the object (its generateName when it has no name yet) with a
// NamespaceTerminating cause. The cache of namespaces may lag a delete
// this server has just made, so a namespace marked here is read from the
// store until the cache shows it terminating.
func (s *Server) checkNamespaceActive(ctx context.Context, gr schema.GroupResource, namespace, name string) error {
	ns, err := s.ns.fetch(ctx, "", namespace)
	if err != nil {
		s.terminating.Delete(namespace)
		return nil // a missing namespace is the caller's to refuse
	}
	terminating := ns.Status.Phase == corev1.NamespaceTerminating
	if !terminating {
		if _, marked := s.terminating.Load(namespace); marked {
			if kv, err := s.cfg.Store.Get(ctx, Key(namespacesGVR, "", namespace)); err == nil {
				live := &corev1.Namespace{}
				if UnmarshalStored(kv.Value, live) == nil {
					terminating = live.Status.Phase == corev1.NamespaceTerminating
				}
			}
		}
	} else {
		s.terminating.Delete(namespace)
	}
	if !terminating {
		return nil
	}
	if name == "" {
		name = "Unknown"
	}
	err = apierrors.NewForbidden(gr, name, fmt.Errorf("unable to create new content in namespace %s because it is being terminated", namespace))
	se := err.(*apierrors.StatusError)
	se.ErrStatus.Details.Causes = append(se.ErrStatus.Details.Causes, metav1.StatusCause{Type: corev1.NamespaceTerminatingCause,
		Message: fmt.Sprintf("namespace %s is being terminated", namespace), Field: "metadata.namespace"})
	return err
}
