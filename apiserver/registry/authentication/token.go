package authentication

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/authn/serviceaccount"
)

var (
	serviceAccountsGVR = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
	podsGVR            = corev1.SchemeGroupVersion.WithResource("pods")
	secretsGVR         = corev1.SchemeGroupVersion.WithResource("secrets")
	nodesGVR           = corev1.SchemeGroupVersion.WithResource("nodes")
	tokenRequestGK     = authenticationGV.WithKind("TokenRequest").GroupKind()
)

// tokenRequests issues bound service-account tokens
// (POST serviceaccounts/NAME/token).
type tokenRequests struct{ c *Config }

func (*tokenRequests) New() runtime.Object { return &authenticationv1.TokenRequest{} }
func (*tokenRequests) Namespaced() bool    { return true }
func (*tokenRequests) Kind() string        { return "TokenRequest" }

func (r *tokenRequests) Create(ctx context.Context, req *apiserver.CreateRequest) (runtime.Object, error) {
	in, ok := req.Object.(*authenticationv1.TokenRequest)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenRequest: %T", req.Object))
	}
	if in.Name != "" && in.Name != req.Name {
		return nil, apierrors.NewInvalid(tokenRequestGK, req.Name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "name"), in.Name, "must match the service account name if specified")})
	}
	if in.Namespace != "" && in.Namespace != req.Namespace {
		return nil, apierrors.NewInvalid(tokenRequestGK, req.Name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "namespace"), in.Namespace, "must match the service account namespace if specified")})
	}
	obj, err := req.Get(ctx, serviceAccountsGVR, req.Namespace, req.Name)
	if err != nil {
		return nil, err
	}
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok {
		return nil, apierrors.NewInternalError(fmt.Errorf("service account %s/%s decoded as %T", req.Namespace, req.Name, obj))
	}
	if in.UID != "" && in.UID != sa.UID {
		// The service account was deleted and made again since the
		// client read it (TokenRequestServiceAccountUIDValidation, on in
		// kube since 1.34).
		return nil, apierrors.NewConflict(schema.GroupResource{Group: authenticationGV.Group, Resource: "TokenRequest"}, req.Name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", in.UID, sa.UID))
	}
	now := r.c.now()
	tr := serviceaccount.TokenRequest{
		Namespace: sa.Namespace, Name: sa.Name, UID: string(sa.UID),
		Audiences: in.Spec.Audiences,
	}
	if in.Spec.ExpirationSeconds != nil {
		tr.ExpirationSeconds = *in.Spec.ExpirationSeconds
		if tr.ExpirationSeconds == 0 {
			// Zero is not "unset" on the wire: refuse it as too short.
			return nil, invalid(&serviceaccount.FieldError{Field: "spec.expirationSeconds", Value: 0,
				Detail: "may not specify a duration less than 10 minutes"})
		}
	}
	if ref := in.Spec.BoundObjectRef; ref != nil {
		if err := r.bind(ctx, req, ref, &tr); err != nil {
			return nil, err
		}
	}
	issued, err := r.c.Issuer.Issue(tr)
	if err != nil {
		return nil, invalid(err)
	}
	out := &authenticationv1.TokenRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: authenticationGV.String(), Kind: "TokenRequest"},
		ObjectMeta: tokenRequestMeta(in.ObjectMeta, sa, now),
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:         issued.Audiences,
			ExpirationSeconds: &issued.ExpirationSeconds,
			BoundObjectRef:    in.Spec.BoundObjectRef,
		},
		Status: authenticationv1.TokenRequestStatus{
			Token:               issued.Token,
			ExpirationTimestamp: metav1.NewTime(issued.ExpirationTimestamp),
		},
	}
	return out, nil
}

// invalid maps an Issuer validation failure to 422, worded as
// kube-apiserver words it.
func invalid(err error) error {
	var fe *serviceaccount.FieldError
	if !errors.As(err, &fe) {
		if errors.Is(err, serviceaccount.ErrConflictingBinding) {
			return apierrors.NewInternalError(err)
		}
		return apierrors.NewInternalError(fmt.Errorf("issue token: %w", err))
	}
	return apierrors.NewInvalid(tokenRequestGK, "", field.ErrorList{field.Invalid(pathOf(fe.Field), fe.Value, fe.Detail)})
}

// pathOf turns "spec.expirationSeconds" into a field path.
func pathOf(dotted string) *field.Path {
	var p *field.Path
	start := 0
	for i := 0; i <= len(dotted); i++ {
		if i == len(dotted) || dotted[i] == '.' {
			if p == nil {
				p = field.NewPath(dotted[start:i])
			} else {
				p = p.Child(dotted[start:i])
			}
			start = i + 1
		}
	}
	return p
}

// bind checks the object a token is to be bound to and records it in tr:
// it must exist, have the given UID if one is given (409 otherwise), and a
// pod must run as the service account.
func (r *tokenRequests) bind(ctx context.Context, req *apiserver.CreateRequest, ref *authenticationv1.BoundObjectReference, tr *serviceaccount.TokenRequest) error {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("boundObjectRef.apiVersion %q: %v", ref.APIVersion, err))
	}
	gvk := gv.WithKind(ref.Kind)
	var uid types.UID
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		obj, err := req.Get(ctx, podsGVR, req.Namespace, ref.Name)
		if err != nil {
			return err
		}
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return apierrors.NewInternalError(fmt.Errorf("pod %s/%s decoded as %T", req.Namespace, ref.Name, obj))
		}
		if pod.Spec.ServiceAccountName != req.Name {
			return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", req.Name))
		}
		uid = pod.UID
		tr.Pod = &serviceaccount.ObjectRef{Name: pod.Name, UID: string(pod.UID)}
		if pod.Spec.NodeName != "" {
			// A pod-bound token names the pod's node too, when it is known.
			if obj, err := req.Get(ctx, nodesGVR, "", pod.Spec.NodeName); err == nil {
				if node, ok := obj.(*corev1.Node); ok {
					tr.Node = &serviceaccount.ObjectRef{Name: node.Name, UID: string(node.UID)}
				}
			}
		}
	case gvk.Group == "" && gvk.Kind == "Secret":
		obj, err := req.Get(ctx, secretsGVR, req.Namespace, ref.Name)
		if err != nil {
			return err
		}
		secret, ok := obj.(*corev1.Secret)
		if !ok {
			return apierrors.NewInternalError(fmt.Errorf("secret %s/%s decoded as %T", req.Namespace, ref.Name, obj))
		}
		uid = secret.UID
		tr.Secret = &serviceaccount.ObjectRef{Name: secret.Name, UID: string(secret.UID)}
	case gvk.Group == "" && gvk.Kind == "Node":
		obj, err := req.Get(ctx, nodesGVR, "", ref.Name)
		if err != nil {
			return err
		}
		node, ok := obj.(*corev1.Node)
		if !ok {
			return apierrors.NewInternalError(fmt.Errorf("node %s decoded as %T", ref.Name, obj))
		}
		uid = node.UID
		tr.Node = &serviceaccount.ObjectRef{Name: node.Name, UID: string(node.UID)}
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
	}
	if ref.UID != "" && ref.UID != uid {
		return apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return nil
}

// tokenRequestMeta is the metadata of a TokenRequest's answer, as
// kube-apiserver gives it: the request's (its managedFields too), with the
// service account's name, namespace and uid where the request has none,
// and the time of issue.
func tokenRequestMeta(m metav1.ObjectMeta, sa *corev1.ServiceAccount, now time.Time) metav1.ObjectMeta {
	if m.Name == "" {
		m.Name = sa.Name
	}
	if m.Namespace == "" {
		m.Namespace = sa.Namespace
	}
	if m.UID == "" {
		m.UID = sa.UID
	}
	m.CreationTimestamp = metav1.NewTime(now)
	return m
}
