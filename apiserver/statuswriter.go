package apiserver

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegate/kubegate/authn"
)

// StatusWriter updates the status subresource of stored objects as
// kube-apiserver's own loopback client does: as system:apiserver, through
// admission and validation, recorded in managedFields for the manager
// "kube-apiserver".
type StatusWriter interface {
	// UpdateStatus writes obj's status, conditional on its
	// resourceVersion: a stale one is kube's 409 Conflict.
	UpdateStatus(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error)
}

// WantsStatusWriter is an Admission that writes status as kube's plugins
// do through their loopback client (the ResourceQuota plugin charging
// quotas); New gives it one before the server answers any request.
type WantsStatusWriter interface {
	SetStatusWriter(StatusWriter)
}

// loopbackManager is the field manager kube-apiserver's loopback client
// writes as, from its user agent.
const loopbackManager = "kube-apiserver"

type loopbackStatus struct{ s *Server }

func (w loopbackStatus) UpdateStatus(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	res, ok := w.s.registry().get(gvr)
	if !ok {
		return nil, fmt.Errorf("update status: %s is not served", gvr)
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, fmt.Errorf("update status: %w", err)
	}
	ctx = authn.WithResponse(ctx, &authn.Response{User: authn.User{Name: "system:apiserver", Groups: []string{"system:authenticated", "system:masters"}}})
	r, err := http.NewRequestWithContext(ctx, http.MethodPut, "/", http.NoBody)
	if err != nil {
		return nil, err
	}
	q := &request{s: w.s, r: r, res: res, ns: acc.GetNamespace(), name: acc.GetName(), sub: "status", verb: "update"}
	return q.guaranteedUpdate(func(runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil }, loopbackManager)
}
