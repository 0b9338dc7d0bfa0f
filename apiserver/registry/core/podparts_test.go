package core_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// debugPatch is the strategic merge patch kubectl debug sends to
// pods/ephemeralcontainers to add container name.
func debugPatch(name, extra string) string {
	return fmt.Sprintf(`{"metadata":{"labels":{"changed":"yes"}},"spec":{"containers":[{"name":"app","image":"other"}],`+
		`"ephemeralContainers":[{"name":%q,"image":"busybox","stdin":true,"tty":true%s}]}}`, name, extra)
}

// pods/ephemeralcontainers adds ephemeral containers and changes nothing
// else of the pod; the ones there may not go or change, and each is
// checked as kube checks an ephemeral container (D.9).
func TestEphemeralContainersSubresource_D9(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, testPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := pods.Patch(ctx, "p", types.StrategicMergePatchType, []byte(debugPatch("debugger", `,"targetContainerName":"app"`)), metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil {
		t.Fatal(err)
	}
	ecs := got.Spec.EphemeralContainers
	if len(ecs) != 1 || ecs[0].Name != "debugger" || ecs[0].TargetContainerName != "app" || ecs[0].TerminationMessagePolicy != corev1.TerminationMessageReadFile || ecs[0].ImagePullPolicy != corev1.PullAlways {
		t.Errorf("ephemeral containers = %+v, want debugger, targeting app, with a container's defaults", ecs)
	}
	if got.Labels["changed"] != "" || got.Spec.Containers[0].Image == "other" {
		t.Errorf("labels %v, image %q: want neither changed by the subresource", got.Labels, got.Spec.Containers[0].Image)
	}
	// As in kube, the writer owns the labels it sent though they were not
	// stored.
	owned := ""
	for _, mf := range got.ManagedFields {
		if mf.Subresource == "ephemeralcontainers" && mf.FieldsV1 != nil {
			owned = mf.FieldsV1.GetRawString()
		}
	}
	if !strings.Contains(owned, `"f:changed"`) || !strings.Contains(owned, `"f:ephemeralContainers"`) {
		t.Errorf("managed fields of the subresource = %s, want the labels sent and the ephemeral containers", owned)
	}
	if got.Generation != 2 {
		t.Errorf("generation = %d, want 2: the spec changed", got.Generation)
	}
	onGet, err := srv.Client.CoreV1().RESTClient().Get().Namespace("default").Resource("pods").Name("p").SubResource("ephemeralcontainers").Do(ctx).Get()
	if err != nil || len(onGet.(*corev1.Pod).Spec.EphemeralContainers) != 1 {
		t.Errorf("GET pods/p/ephemeralcontainers = %v, %v; want the pod with its ephemeral container", onGet, err)
	}

	const path = "/api/v1/namespaces/default/pods/p/ephemeralcontainers"
	smp := map[string]string{"Content-Type": "application/strategic-merge-patch+json"}
	for _, tt := range []struct {
		name, method, body string
		causes             []metav1.StatusCause
	}{
		{"a removal", "PATCH", `{"spec":{"$setElementOrder/ephemeralContainers":[],"ephemeralContainers":[{"$patch":"delete","name":"debugger"}]}}`,
			[]metav1.StatusCause{rt.Cause(metav1.CauseTypeForbidden, "spec.ephemeralContainers", "Forbidden: existing ephemeral containers \"debugger\" may not be removed\n")}},
		{"a duplicate name and a target that is not there", "PATCH", debugPatch("app", `,"targetContainerName":"nope"`),
			[]metav1.StatusCause{rt.Cause(metav1.CauseTypeFieldValueDuplicate, "spec.ephemeralContainers[0].name", `Duplicate value: "app"`),
				rt.Cause(metav1.CauseTypeFieldValueNotFound, "spec.ephemeralContainers[0].targetContainerName", `Not found: "nope"`)}},
		{"ports and resources", "PATCH", debugPatch("d2", `,"ports":[{"containerPort":80}],"resources":{"limits":{"cpu":"1"}}`),
			[]metav1.StatusCause{rt.Cause(metav1.CauseTypeForbidden, "spec.ephemeralContainers[0].ports", "Forbidden: cannot be set for an Ephemeral Container"),
				rt.Cause(metav1.CauseTypeForbidden, "spec.ephemeralContainers[0].resources", "Forbidden: cannot be set for an Ephemeral Container")}},
	} {
		code, body := rt.Do(t, srv, tt.method, path, tt.body, smp)
		t.Run(tt.name, func(t *testing.T) { rt.WantInvalid(t, code, body, "Pod", "p", tt.causes...) })
	}

	// A strategic merge patch puts a new one first. A change of an
	// existing one shows the diff kube shows.
	code, body := rt.Do(t, srv, "PATCH", path, `{"spec":{"ephemeralContainers":[{"name":"debugger","image":"alpine"}]}}`, smp)
	var st metav1.Status
	_ = json.Unmarshal(body, &st)
	if code != 422 || !strings.Contains(st.Message, `existing ephemeral containers "debugger" may not be changed`) || !strings.Contains(st.Message, `"Image": "alpine"`) {
		t.Errorf("changing an ephemeral container: %d %s, want 422 naming it with a diff", code, st.Message)
	}
	// The pod itself may not change them.
	p, _ := pods.Get(ctx, "p", metav1.GetOptions{})
	p.Spec.EphemeralContainers = nil
	if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pod updates may not change fields") {
		t.Errorf("removing an ephemeral container by an update of the pod: %v, want kube's 422", err)
	}
}

// An update of pods/ephemeralcontainers and of pods/resize is admitted
// as the subresource's, with the pod (D.13).
func TestPodPartsAreAdmittedAsTheirSubresource_D13(t *testing.T) {
	t.Parallel()
	deny := &denySubresources{}
	srv := apiservertest.Start(t, apiservertest.WithAdmission(deny))
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, testPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deny.mu.Lock()
	deny.on = true
	deny.mu.Unlock()
	_, err1 := pods.Patch(ctx, "p", types.StrategicMergePatchType, []byte(debugPatch("d", "")), metav1.PatchOptions{}, "ephemeralcontainers")
	_, err2 := pods.Patch(ctx, "p", types.StrategicMergePatchType, []byte(`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"1"}}}]}}`), metav1.PatchOptions{}, "resize")
	if !apierrors.IsForbidden(err1) || !apierrors.IsForbidden(err2) {
		t.Errorf("got %v and %v, want the plugin's 403s", err1, err2)
	}
	deny.mu.Lock()
	defer deny.mu.Unlock()
	want := "[UPDATE pods/ephemeralcontainers Pod p *v1.Pod UPDATE pods/resize Pod p *v1.Pod]"
	if fmt.Sprint(deny.seen) != want {
		t.Errorf("admitted %v, want %s", deny.seen, want)
	}
}

// pods/resize changes the cpu and memory of the containers in place;
// nothing may be removed, nothing else may change, the QoS class stays
// (D.9).
func TestResizeSubresource_D9(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	ctx := context.Background()
	pods := srv.Client.CoreV1().Pods("default")
	pod := testPod("p")
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := pods.Patch(ctx, "p", types.StrategicMergePatchType,
		[]byte(`{"metadata":{"labels":{"x":"y"}},"spec":{"activeDeadlineSeconds":5,"containers":[{"name":"app","resources":{"requests":{"cpu":"150m"},"limits":{"cpu":"300m"}}}]}}`),
		metav1.PatchOptions{}, "resize")
	if err != nil {
		t.Fatal(err)
	}
	r := got.Spec.Containers[0].Resources
	if r.Requests.Cpu().String() != "150m" || r.Limits.Cpu().String() != "300m" || r.Requests.Memory().String() != "64Mi" {
		t.Errorf("resources = %v, want cpu 150m/300m, memory as it was", r)
	}
	if got.Labels["x"] != "" || got.Spec.ActiveDeadlineSeconds != nil || got.Generation != 2 || got.Status.QOSClass != corev1.PodQOSBurstable {
		t.Errorf("labels %v, deadline %v, generation %d, qos %s: want only the resources changed, generation 2, still Burstable",
			got.Labels, got.Spec.ActiveDeadlineSeconds, got.Generation, got.Status.QOSClass)
	}

	const path = "/api/v1/namespaces/default/pods/p/resize"
	smp := map[string]string{"Content-Type": "application/strategic-merge-patch+json"}
	for _, tt := range []struct {
		name, body string
		causes     []metav1.StatusCause
	}{
		{"a removed limit", `{"spec":{"containers":[{"name":"app","resources":{"limits":{"memory":null}}}]}}`,
			[]metav1.StatusCause{rt.Cause(metav1.CauseTypeForbidden, "spec.containers[0].resources.limits", "Forbidden: resource limits cannot be removed")}},
		{"a QoS class that would change", `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"300m","memory":"128Mi"}}}]}}`,
			[]metav1.StatusCause{rt.Cause(metav1.CauseTypeFieldValueInvalid, "spec", `Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing`)}},
		{"another resource", `{"spec":{"containers":[{"name":"app","resources":{"requests":{"ephemeral-storage":"1Gi"}}}]}}`,
			[]metav1.StatusCause{rt.Cause(metav1.CauseTypeForbidden, "spec", "Forbidden: only cpu and memory resources are mutable")}},
		{"an added container", `{"spec":{"containers":[{"name":"two","image":"x"}]}}`,
			[]metav1.StatusCause{rt.Cause(metav1.CauseTypeForbidden, "spec.containers", "Forbidden: containers may not be added or removed on resize")}},
	} {
		code, body := rt.Do(t, srv, "PATCH", path, tt.body, smp)
		t.Run(tt.name, func(t *testing.T) { rt.WantInvalid(t, code, body, "Pod", "p", tt.causes...) })
	}

	// A running container whose node reports no resources cannot resize.
	got.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Image: "i", ImageID: "i", Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
	if _, err := pods.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, body := rt.Do(t, srv, "PATCH", path, `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"120m"}}}]}}`, smp)
	rt.WantInvalid(t, code, body, "Pod", "p", rt.Cause(metav1.CauseTypeForbidden, "spec", "Forbidden: Pod running on node without support for resize"))
}

// A resize is held to the namespace's LimitRanges as a new pod is, as
// kube's LimitRanger admits pods/resize (D.8, D.9): the user who may
// only resize cannot take a container past their max.
func TestResizeIsHeldToLimitRanges_D9(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t)
	ctx := context.Background()
	if _, err := srv.Client.CoreV1().LimitRanges("default").Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "bounds"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer,
			Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pods := srv.Client.CoreV1().Pods("default")
	pod := testPod("p")
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := pods.Patch(ctx, "p", types.StrategicMergePatchType,
		[]byte(`{"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"4"}}}]}}`), metav1.PatchOptions{}, "resize")
	if !apierrors.IsForbidden(err) || err.Error() != `pods "p" is forbidden: maximum cpu usage per Container is 1, but limit is 4` {
		t.Errorf("a resize past the LimitRange's max: got %v, want kube's 403", err)
	}
	got, err := pods.Patch(ctx, "p", types.StrategicMergePatchType,
		[]byte(`{"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"1"}}}]}}`), metav1.PatchOptions{}, "resize")
	if err != nil || got.Spec.Containers[0].Resources.Limits.Cpu().String() != "1" {
		t.Errorf("a resize within it: got %v, %v; want it applied", got, err)
	}
}
