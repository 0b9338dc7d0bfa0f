package admission

import (
	"context"
	"sort"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/store"
)

var (
	ingressesGVR      = networkingv1.SchemeGroupVersion.WithResource("ingresses")
	ingressClassesGVR = networkingv1.SchemeGroupVersion.WithResource("ingressclasses")
)

// ingressClassAnnotation is the deprecated annotation that names an
// Ingress's class; an Ingress that has it gets no default class.
const ingressClassAnnotation = "kubernetes.io/ingress.class"

// DefaultIngressClass is kube-apiserver's DefaultIngressClass plugin
// (D.19): a new Ingress that names no class, by ingressClassName or by
// the deprecated annotation, gets the default IngressClass's name, the
// newest if several are annotated default, none if there is none.
func DefaultIngressClass(st store.Store) apiserver.Admission {
	return apiserver.AdmissionFunc(func(ctx context.Context, a *apiserver.AdmissionAttributes) error {
		if a.Operation != apiserver.Create || a.Resource.GroupResource() != ingressesGVR.GroupResource() || a.Subresource != "" {
			return nil
		}
		in, ok := a.Object.(*networkingv1.Ingress)
		if !ok || in.Spec.IngressClassName != nil {
			return nil
		}
		if _, ok := in.Annotations[ingressClassAnnotation]; ok {
			return nil
		}
		def, err := defaultIngressClass(ctx, st)
		if storeFault(err) {
			return err
		}
		if err != nil {
			return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, err)
		}
		if def != "" {
			in.Spec.IngressClassName = &def
		}
		return nil
	})
}

// defaultIngressClass names the newest class annotated default (by name
// among those made at the same moment), or "".
func defaultIngressClass(ctx context.Context, st store.Store) (string, error) {
	var defaults []*networkingv1.IngressClass
	opts := store.ListOptions{}
	for {
		page, err := st.List(ctx, apiserver.Key(ingressClassesGVR, "", ""), opts)
		if err != nil {
			return "", err
		}
		for _, kv := range page.KVs {
			ic := &networkingv1.IngressClass{}
			if err := apiserver.UnmarshalStored(kv.Value, ic); err != nil {
				return "", err
			}
			if ic.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true" {
				defaults = append(defaults, ic)
			}
		}
		if !page.More || len(page.KVs) == 0 {
			break
		}
		opts.Revision, opts.Continue = page.Revision, page.KVs[len(page.KVs)-1].Key
	}
	if len(defaults) == 0 {
		return "", nil
	}
	sort.Slice(defaults, func(i, j int) bool {
		ti, tj := defaults[i].CreationTimestamp.UnixNano(), defaults[j].CreationTimestamp.UnixNano()
		if ti == tj {
			return defaults[i].Name < defaults[j].Name
		}
		return ti > tj
	})
	return defaults[0].Name, nil
}
