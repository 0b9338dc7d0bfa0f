package core_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/apiservertest"
)

// denySubresources is an admission plugin that records and refuses every
// write of a subresource and every connect, once on.
type denySubresources struct {
	mu   sync.Mutex
	on   bool
	seen []string
}

func (d *denySubresources) Admit(_ context.Context, a *apiserver.AdmissionAttributes) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.on || a.Subresource == "" && a.Resource.Resource != "bindings" {
		return nil
	}
	d.seen = append(d.seen, fmt.Sprintf("%s %s/%s %s %s %T", a.Operation, a.Resource.Resource, a.Subresource, a.Kind.Kind, a.Name, a.Object))
	return apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, fmt.Errorf("no %s", a.Subresource))
}

// kube-apiserver admits the creates of pods/eviction, pods/binding, the
// legacy bindings and serviceaccounts/token with the object sent, and the
// connects to pods/exec, attach and portforward with their options,
// before it acts: a refusal leaves the pod as it was (D.13).
func TestSubresourceCreatesAndConnectsAreAdmitted_D13(t *testing.T) {
	t.Parallel()
	deny := &denySubresources{}
	srv := apiservertest.Start(t, apiservertest.WithAdmission(deny), apiservertest.WithTokenReviews())
	ctx := context.Background()
	cs := srv.Client
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	deny.mu.Lock()
	deny.on = true
	deny.mu.Unlock()
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	rc := cs.CoreV1().RESTClient()
	for _, tt := range []struct {
		name string
		err  error
	}{
		{"eviction", cs.PolicyV1().Evictions("default").Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}})},
		{"binding", cs.CoreV1().Pods("default").Bind(ctx, binding, metav1.CreateOptions{})},
		{"bindings", rc.Post().Namespace("default").Resource("bindings").Body(binding).Do(ctx).Error()},
		{"token", func() error {
			_, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			return err
		}()},
		{"exec", rc.Post().Namespace("default").Resource("pods").Name("p").SubResource("exec").Param("command", "ls").Param("stdout", "true").Do(ctx).Error()},
		{"attach", rc.Post().Namespace("default").Resource("pods").Name("p").SubResource("attach").Param("stdin", "1").Do(ctx).Error()},
		{"portforward", rc.Post().Namespace("default").Resource("pods").Name("p").SubResource("portforward").Param("ports", "80").Do(ctx).Error()},
	} {
		if !apierrors.IsForbidden(tt.err) {
			t.Errorf("%s: got %v, want the plugin's 403", tt.name, tt.err)
		}
	}
	deny.mu.Lock()
	want := []string{
		"CREATE pods/eviction Eviction p *v1.Eviction",
		"CREATE pods/binding Binding p *v1.Binding",
		"CREATE bindings/ Binding p *v1.Binding",
		"CREATE serviceaccounts/token TokenRequest robot *v1.TokenRequest",
		"CONNECT pods/exec PodExecOptions p *v1.PodExecOptions",
		"CONNECT pods/attach PodAttachOptions p *v1.PodAttachOptions",
		"CONNECT pods/portforward PodPortForwardOptions p *v1.PodPortForwardOptions",
	}
	if fmt.Sprint(deny.seen) != fmt.Sprint(want) {
		t.Errorf("admitted:\n%q\nwant\n%q", deny.seen, want)
	}
	deny.on = false
	deny.mu.Unlock()
	got, err := cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
	if err != nil || got.Spec.NodeName != "" || got.DeletionTimestamp != nil {
		t.Errorf("pod after the refusals: %v, %v; want it unbound and not deleted", got, err)
	}
}
