// Package apiserver serves a Kubernetes-compatible REST API over a store.Store:
// discovery, OpenAPI, and the resources of Config.Resources (the groups
// of apiserver/registry) with their verbs (create, get, list, watch,
// update, patch, delete, deletecollection), Table output, and the
// authentication, impersonation, authorization and admission chain in
// front of them.
package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/store"
)

// Config configures a Server. Zero values are noted per field.
type Config struct {
	Store         store.Store   // required
	Authenticator authn.Request // required; the caller builds the union
	// IdentityHeaders name, besides Authorization and the standard
	// X-Remote-* headers, the headers removed from every authenticated
	// request (as authn.ClearIdentityHeaders does), usually the
	// request-header authenticator's own.
	IdentityHeaders []authn.IdentityHeaders
	Authorizer      authz.Authorizer // required; called per request with authz.Attributes
	// Impersonation: when true, Impersonate-* headers are authorized through
	// Authorizer with authz.Impersonate and the request runs as the
	// impersonated user. When false they are rejected with 403.
	Impersonation bool
	// Resources are the resources served, none of them defined in this
	// package: the API groups of apiserver/registry/<group>, which
	// apiserver/registry.Resources lists. Each must be a value of its own
	// (New keeps and completes it) with a group, version and resource no
	// other has. They must include the core group's namespaces
	// (apiserver/registry/core's), which the namespace lifecycle needs:
	// New refuses a Config without them.
	Resources  []*Resource
	Admission  []Admission        // run in order on create and update (and delete with Object nil)
	Creators   map[string]Creator // virtual create-only endpoints, see Creator
	Escalation EscalationChecker  // nil: no RBAC escalation checks on roles/bindings writes
	Logger     *slog.Logger       // nil: slog.Default()
	Now        func() time.Time   // nil: time.Now
	// ExternalAddress is the host:port reported in serverAddressByClientCIDRs;
	// "" reports the request's Host.
	ExternalAddress string
	// ServiceClusterIPRange is where Services' cluster IPs come from
	// (kube-apiserver's --service-cluster-ip-range); its first address is
	// the kubernetes Service's. Zero: DefaultServiceClusterIPRange.
	ServiceClusterIPRange netip.Prefix
	// ServiceNodePortRange is where node ports come from; zero:
	// DefaultServiceNodePortRange.
	ServiceNodePortRange PortRange
	// KubernetesServicePort is the port the kubernetes Service in default
	// sends its port 443 to: the API server's secure port as clients reach
	// it. 0: 6443.
	KubernetesServicePort int
	// AdvertiseAddress is the address the kubernetes Service's endpoints
	// list for this server, on KubernetesServicePort (kube-apiserver's
	// --advertise-address, J.3); the zero Addr writes no endpoints. New
	// refuses one an endpoint may not hold (CheckAdvertiseAddress) unless
	// EndpointReconciler is EndpointReconcilerNone.
	AdvertiseAddress netip.Addr
	// EndpointReconciler is EndpointReconcilerLease ("" too) or
	// EndpointReconcilerNone.
	EndpointReconciler string
	// EndpointLeaseTTL is how long this server's lease lasts unrenewed, and
	// EndpointReconcileInterval how often it is renewed and the endpoints
	// reconciled; 0: DefaultEndpointLeaseTTL and
	// DefaultEndpointReconcileInterval, kube-apiserver's 15 s and 10 s.
	EndpointLeaseTTL          time.Duration
	EndpointReconcileInterval time.Duration
	// Registry receives the request metrics (apiserver_request_total and
	// apiserver_request_duration_seconds), served at /metrics; nil means a
	// new registry of the server's own.
	Registry *prometheus.Registry
	// Aggregator serves the group versions of APIServices with a service
	// (I.3); nil: such a group version is not served.
	Aggregator Aggregator
	// RequestTimeout is the deadline of every request that is not
	// long-running, kube-apiserver's --request-timeout (J.4); 0 means
	// DefaultRequestTimeout, a negative value no deadline.
	RequestTimeout time.Duration
	// HealthcheckTimeout bounds the store check of /healthz and /livez,
	// ReadycheckTimeout that of /readyz (--etcd-healthcheck-timeout,
	// --etcd-readycheck-timeout); 0 means DefaultStoreCheckTimeout.
	HealthcheckTimeout, ReadycheckTimeout time.Duration
}

// The defaults of Config's timeouts, kube-apiserver's.
const (
	DefaultRequestTimeout    = 60 * time.Second
	DefaultStoreCheckTimeout = 2 * time.Second
)

// Operation is what an admission plugin is asked about.
type Operation string

// The admission operations.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// AdmissionAttributes describe one write.
type AdmissionAttributes struct {
	Operation       Operation
	Resource        schema.GroupVersionResource
	Kind            schema.GroupVersionKind // of Resource (of the parent for a subresource)
	Subresource     string
	Namespace, Name string
	User            authn.User
	Object          runtime.Object // the new object (typed, e.g. *corev1.Pod); nil on DELETE
	OldObject       runtime.Object // nil on CREATE
	DryRun          bool
	// Options are the write's options as kube-apiserver hands them to
	// admission (*metav1.DeleteOptions on DELETE); nil: a plugin that
	// needs them builds them from DryRun.
	Options runtime.Object
	// Reinvoke is set by a mutating plugin that asks, as kube's
	// reinvocation policy does, for every plugin's Admit to run once more
	// after the first pass; Reinvocation is true during that second pass.
	Reinvoke, Reinvocation bool
	// Shared is what a plugin keeps for the length of the write, across
	// both phases (the k8s.io/apiserver attributes record the dynamic
	// plugins share); nil until one sets it.
	Shared any
}

// Admission mutates and/or validates a write. Returning an
// *apierrors.StatusError gives the client that status; any other error is a
// 500.
type Admission interface {
	Admit(ctx context.Context, a *AdmissionAttributes) error
}

// AdmissionValidator is an Admission with a second, validating phase, as
// kube-apiserver's validating admission: Validate runs after every plugin's
// Admit and after the server has validated the object, just before it is
// stored, in the order of Config.Admission. It must not change a.Object.
type AdmissionValidator interface {
	Admission
	Validate(ctx context.Context, a *AdmissionAttributes) error
}

// Admission plugins add warnings to the answer with
// k8s.io/apiserver/pkg/warning.AddWarning on the context they are given;
// the server sends them as kube-apiserver does, as Warning headers
// (299 - "text"), each text once.

// Lister reads the server's copies of namespaces, limit ranges, service
// accounts and priority classes, which store watches keep, as
// kube-apiserver's plugins read informers: a write shows in them a moment
// after it is answered. What they return is shared and must not be
// changed.
type Lister interface {
	// GetNamespace returns the namespace, from the store when the copies
	// do not have it yet; a missing one is a NotFound StatusError.
	GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error)
	// LimitRanges returns the limit ranges of namespace, by name.
	LimitRanges(namespace string) []*corev1.LimitRange
	// GetServiceAccount and GetPriorityClass return the object, from the
	// store when the copies do not have it yet; a missing one is
	// store.ErrNotFound.
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	GetPriorityClass(ctx context.Context, name string) (*schedulingv1.PriorityClass, error)
	// PriorityClasses returns every priority class, by name.
	PriorityClasses() []*schedulingv1.PriorityClass
}

// WantsLister is an Admission that reads through the server's Lister; New
// gives it one before the server answers any request.
type WantsLister interface {
	SetLister(Lister)
}

// WantsAuthorizer is an Admission that asks the server's authorizer
// questions of its own (may this user approve for this signer, H.1); New
// gives it Config.Authorizer before the server answers any request.
type WantsAuthorizer interface {
	SetAuthorizer(authz.Authorizer)
}

// AdmissionFunc adapts a function to Admission.
type AdmissionFunc func(ctx context.Context, a *AdmissionAttributes) error

// Admit calls f(ctx, a).
func (f AdmissionFunc) Admit(ctx context.Context, a *AdmissionAttributes) error { return f(ctx, a) }

// Creator serves POST on a virtual (never stored) resource or subresource.
// Keys of Config.Creators are "GROUP/VERSION/RESOURCE" for top-level virtual
// resources (group "" for core, e.g.
// "authentication.k8s.io/v1/selfsubjectreviews") and
// "GROUP/VERSION/RESOURCE/SUBRESOURCE" for subresources (e.g.
// "/v1/serviceaccounts/token").
//
// New makes each a Subresource: the entry "" of a virtual Resource, or the
// named entry of a stored one. The server decodes the body (JSON, YAML or
// protobuf, by Content-Type) into
// New(), authorizes the request (verb create on that resource/subresource),
// calls Create, and encodes the result in the negotiated format with status
// 201. Top-level virtual resources are listed in discovery with verbs
// ["create"].
type Creator interface {
	New() runtime.Object
	Namespaced() bool
	Kind() string // e.g. "SelfSubjectReview", for discovery
	Create(ctx context.Context, r *CreateRequest) (runtime.Object, error)
}

// CreateRequest is what a Creator is given.
type CreateRequest struct {
	Namespace, Name string         // Name is the parent's name for subresources
	User            authn.User     // the authenticated (after impersonation) user
	Object          runtime.Object // decoded body, of New()'s type
	Store           store.Store
	Codecs          serializer.CodecFactory
	// Get reads a stored object, typed (returns an *apierrors.StatusError
	// NotFound when it does not exist).
	Get func(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
}

// EscalationChecker is called on a write of a Role, ClusterRole,
// RoleBinding or ClusterRoleBinding after mutating admission and before
// the object is prepared and validated, with the stored object on an
// update (old is nil on a create). Return an *apierrors.StatusError to
// refuse, a 403 for an escalation.
type EscalationChecker interface {
	CheckRBACWrite(ctx context.Context, user authn.User, obj, old runtime.Object, namespace string) error
}

// Key is the store key of an object: /registry/GROUP/RESOURCE/NAMESPACE/NAME
// for namespaced resources and /registry/GROUP/RESOURCE/NAME for
// cluster-scoped ones (namespace ""), with GROUP "core" for the core group.
// With name "" it is the prefix of the collection, ending in "/".
func Key(gvr schema.GroupVersionResource, namespace, name string) string {
	g := gvr.Group
	if g == "" {
		g = "core"
	}
	k := "/registry/" + g + "/" + gvr.Resource + "/"
	if namespace != "" {
		k += namespace + "/"
	}
	return k + name
}

// DecodeStored decodes a stored value (the protobuf envelope the server
// writes, or the JSON of a versioned object with apiVersion and kind) into
// its typed object from scheme, and sets its resourceVersion to rev. A
// JSON value of a kind scheme does not know (a custom resource, stored as
// JSON) is decoded into an *unstructured.Unstructured.
func DecodeStored(scheme *runtime.Scheme, data []byte, rev int64) (runtime.Object, error) {
	obj, _, err := storedDecoder(scheme).Decode(data, nil, nil)
	if err != nil && runtime.IsNotRegisteredError(err) && !bytes.HasPrefix(data, protobufPrefix) {
		obj, _, err = unstructured.UnstructuredJSONScheme.Decode(data, nil, &unstructured.Unstructured{})
	}
	if err != nil {
		return nil, fmt.Errorf("decode stored object: %w", err)
	}
	if err := setResourceVersion(obj, rev); err != nil {
		return nil, err
	}
	return obj, nil
}

// UnmarshalStored decodes a stored value into into, a typed object of the
// stored kind (for example a *corev1.Pod for a value under the pods
// prefix). It reads the protobuf envelope the server writes and plain JSON,
// with or without apiVersion and kind; the resourceVersion is left unset.
func UnmarshalStored(data []byte, into runtime.Object) error {
	raw, ok := bytes.CutPrefix(data, protobufPrefix)
	if !ok {
		return json.Unmarshal(data, into)
	}
	var u runtime.Unknown
	if err := u.Unmarshal(raw); err != nil {
		return fmt.Errorf("decode stored object: %w", err)
	}
	m, ok := into.(interface{ Unmarshal([]byte) error })
	if !ok {
		return fmt.Errorf("decode stored %s: %T has no protobuf encoding", u.Kind, into)
	}
	if err := m.Unmarshal(u.Raw); err != nil {
		return fmt.Errorf("decode stored %s: %w", u.Kind, err)
	}
	return nil
}

func setResourceVersion(obj runtime.Object, rev int64) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Errorf("object %T has no metadata: %w", obj, err)
	}
	acc.SetResourceVersion(strconv.FormatInt(rev, 10))
	return nil
}
