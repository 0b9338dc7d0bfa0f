package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/apiserver/registry"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/internal/benchcpu"
	"github.com/kubegate/kubegate/store/bolt"
)

// BenchmarkCreatePodAdmitted measures pod creates through the full handler
// with kube-apiserver's admission chain (Chain), on a durable bolt store,
// with 64 concurrent clients: what admission adds to
// apiserver's BenchmarkCreatePod. "privileged" is a namespace without
// Pod Security labels, as most are; "restricted" enforces the restricted
// profile on pods that meet it, so every create is evaluated. Run:
//
//	go test ./apiserver/admission -run '^$' -bench CreatePodAdmitted -benchtime 5000x
func BenchmarkCreatePodAdmitted(b *testing.B) {
	for _, bc := range []struct {
		name   string
		labels map[string]string
	}{
		{"privileged", nil},
		{"restricted", map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			h, st := newAdmittedHandler(b)
			putNamespace(b, st, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench", Labels: bc.labels}})
			putServiceAccount(b, st, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "default"}})
			body := benchPodJSON(b)
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(64 / max(1, runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			cpu := benchcpu.Start()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					name := fmt.Sprintf("p%d", n.Add(1))
					data := bytes.Replace(body, []byte(`"name":"NAME"`), []byte(`"name":"`+name+`"`), 1)
					req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/bench/pods", bytes.NewReader(data))
					req.Header.Set("Content-Type", "application/json")
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusCreated {
						b.Errorf("create %s: %d %s", name, rec.Code, rec.Body)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pods/s")
			cpu.Report(b)
		})
	}
}

// benchPodJSON is a pod that meets the restricted profile, named NAME.
func benchPodJSON(b *testing.B) []byte {
	no, yes := false, true
	pod := corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "NAME", Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", Command: []string{"app"},
				Ports: []corev1.ContainerPort{{ContainerPort: 2580}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		},
	}
	data, err := json.Marshal(pod)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// newAdmittedHandler returns the handler of a server with Chain on a
// durable bolt store (every write synced), closed when b ends.
func newAdmittedHandler(b *testing.B) (http.Handler, *bolt.Store) {
	st, err := bolt.Open(filepath.Join(b.TempDir(), "durable.db"), bolt.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	s, err := apiserver.New(apiserver.Config{
		Store:     st,
		Resources: registry.Resources(),
		Authenticator: authn.RequestFunc(func(*http.Request) (*authn.Response, bool, error) {
			return &authn.Response{User: authn.User{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}}, true, nil
		}),
		Authorizer: authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
			return authz.Allow, "", nil
		}),
		Admission: Chain(st),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s.Handler(), st
}
