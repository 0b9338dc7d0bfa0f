package apiserver

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegate/kubegate/store"
)

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// serviceAccountsGVR is core v1 serviceaccounts, which the ServiceAccount
// admission plugin reads for every new pod (D.8).
var serviceAccountsGVR = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}

// namespaceExists reports whether namespace name exists, from the cache of
// namespaces, or the store when the cache does not hold it yet.
func (s *Server) namespaceExists(ctx context.Context, name string) (bool, error) {
	_, err := s.ns.fetch(ctx, "", name)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// lister is the server's Lister: its caches of namespaces, limit ranges,
// service accounts and priority classes.
type lister struct{ s *Server }

func (l lister) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns, err := l.s.ns.fetch(ctx, "", name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierrors.NewNotFound(namespacesGVR.GroupResource(), name)
	}
	return ns, err
}

func (l lister) LimitRanges(namespace string) []*corev1.LimitRange {
	return l.s.limitRanges.list(namespace)
}

func (l lister) GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return l.s.serviceAccounts.fetch(ctx, namespace, name)
}

func (l lister) GetPriorityClass(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
	return l.s.priorityClasses.fetch(ctx, "", name)
}

func (l lister) PriorityClasses() []*schedulingv1.PriorityClass {
	return l.s.priorityClasses.list("")
}

// ensureNamespaces creates the system namespaces that are missing.
func (s *Server) ensureNamespaces(ctx context.Context) error {
	for _, name := range systemNamespaces {
		if ok, err := s.namespaceExists(ctx, name); err != nil || ok {
			if err != nil {
				return fmt.Errorf("check namespace %s: %w", name, err)
			}
			continue
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		res, _ := s.registry().get(namespacesGVR)
		if _, err := s.createStored(ctx, res, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", name, err)
		}
	}
	return nil
}

// UndeletableNamespace refuses the deletion of default, kube-system and
// kube-public, as kube-apiserver's namespace lifecycle does: the
// namespace resource's Undeletable.
func UndeletableNamespace(name string) error {
	for _, ns := range systemNamespaces[:3] {
		if name == ns {
			return errors.New("this namespace may not be deleted")
		}
	}
	return nil
}
