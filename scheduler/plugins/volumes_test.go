package plugins

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubegate/kubegate/scheduler/framework"
)

func volNode(name, zone string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
		v1.LabelHostname: name, v1.LabelTopologyZone: zone}}}
}

func claimPod(claims ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-p"}}
	for _, c := range claims {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: c, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	return p
}

func pvc(name, class, volume string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: volume,
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}}}
}

func pinnedVolume(name, class, host string, labels map[string]string) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.PersistentVolumeSpec{
		StorageClassName: class, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable}}
	if host != "" {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{
			exprs(expr(v1.LabelHostname, v1.NodeSelectorOpIn, host))}}}
	}
	return pv
}

func sclass(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

// volumeVerdicts runs VolumeBinding's PreFilter, then its Filter and
// VolumeZone's on each node, and returns the message of each rejection
// ("" for a node that fits), or the PreFilter's.
func volumeVerdicts(t *testing.T, src VolumeSources, pod *v1.Pod, nodes ...*v1.Node) (string, []string) {
	t.Helper()
	ctx := context.Background()
	vb := &VolumeBinding{Sources: src}
	state := framework.NewCycleState(framework.NewSnapshot(nodes, nil), framework.NewPodInfo(pod))
	if st := vb.PreFilter(ctx, state, pod); st.IsSkip() {
		return "skip", nil
	} else if !st.IsSuccess() {
		return st.Message(), nil
	}
	var got []string
	for _, n := range nodes {
		ni := framework.NewNodeInfo(n)
		st := vb.Filter(ctx, state, pod, ni)
		if st.IsSuccess() {
			st = VolumeZone{Sources: src}.Filter(ctx, state, pod, ni)
		}
		got = append(got, st.Message())
	}
	return "", got
}

func TestVolumeBindingFilter_E7(t *testing.T) {
	t.Parallel()
	nodes := []*v1.Node{volNode("a", "z1"), volNode("b", "z2")}
	src := &Objects{
		ClassList: []*storagev1.StorageClass{
			sclass("wffc", "kubegate.io/simulated", storagev1.VolumeBindingWaitForFirstConsumer),
			sclass("local", "kubernetes.io/no-provisioner", storagev1.VolumeBindingWaitForFirstConsumer),
			sclass("now", "kubegate.io/simulated", storagev1.VolumeBindingImmediate)},
		ClaimList: []*v1.PersistentVolumeClaim{
			pvc("on-a", "wffc", "pv-a"), pvc("in-z2", "wffc", "pv-z2"),
			pvc("to-provision", "wffc", ""), pvc("static", "local", ""), pvc("immediate", "now", "")},
		VolumeList: []*v1.PersistentVolume{
			pinnedVolume("pv-a", "wffc", "a", nil),
			pinnedVolume("pv-z2", "wffc", "", map[string]string{v1.LabelTopologyZone: "z2"}),
			pinnedVolume("local-b", "local", "b", nil)},
	}
	deleting := pvc("deleting", "wffc", "")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	src.ClaimList = append(src.ClaimList, deleting)
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		preFilter string
		want      []string
	}{
		{"no claims", claimPod(), "skip", nil},
		{"missing claim", claimPod("gone"), `persistentvolumeclaim "gone" not found`, nil},
		{"claim being deleted", claimPod("deleting"), `persistentvolumeclaim "deleting" is being deleted`, nil},
		{"unbound immediate claim", claimPod("immediate"), "pod has unbound immediate PersistentVolumeClaims", nil},
		{"bound volume pinned to a", claimPod("on-a"), "", []string{"", ReasonVolumeNodeConflict}},
		{"bound volume in zone z2", claimPod("in-z2"), "", []string{ReasonVolumeZoneConflict, ""}},
		{"provisioned anywhere", claimPod("to-provision"), "", []string{"", ""}},
		{"only a static volume on b", claimPod("static"), "", []string{ReasonVolumeBindConflict, ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pre, got := volumeVerdicts(t, src, tc.pod, nodes...)
			if pre != tc.preFilter {
				t.Fatalf("PreFilter: got %q, want %q", pre, tc.preFilter)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("node %s: got %q, want %q", nodes[i].Name, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestVolumeBindingPreBind_E7(t *testing.T) {
	t.Parallel()
	node := volNode("a", "z1")
	src := &Objects{
		ClassList: []*storagev1.StorageClass{
			sclass("wffc", "kubegate.io/simulated", storagev1.VolumeBindingWaitForFirstConsumer),
			sclass("local", "kubernetes.io/no-provisioner", storagev1.VolumeBindingWaitForFirstConsumer)},
		ClaimList:  []*v1.PersistentVolumeClaim{pvc("new", "wffc", ""), pvc("static", "local", "")},
		VolumeList: []*v1.PersistentVolume{pinnedVolume("local-a", "local", "a", nil)},
	}
	client := fake.NewClientset()
	var selected, boundVolume string
	// What the binder does next, played by the client: a claim annotated
	// with the node is provisioned and bound, a volume given a claimRef
	// is bound to it.
	client.PrependReactor("update", "persistentvolumeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c := a.(k8stesting.UpdateAction).GetObject().(*v1.PersistentVolumeClaim)
		selected = c.Annotations["volume.kubernetes.io/selected-node"]
		done := c.DeepCopy()
		done.Spec.VolumeName = "pvc-" + string(c.UID)
		done.Annotations["pv.kubernetes.io/bind-completed"] = "yes"
		src.ClaimList[0] = done
		src.VolumeList = append(src.VolumeList, pinnedVolume(done.Spec.VolumeName, "wffc", "a", nil))
		return true, done, nil
	})
	client.PrependReactor("update", "persistentvolumes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pv := a.(k8stesting.UpdateAction).GetObject().(*v1.PersistentVolume)
		boundVolume = pv.Name + "->" + pv.Spec.ClaimRef.Name
		done := src.ClaimList[1].DeepCopy()
		done.Spec.VolumeName = pv.Name
		done.Annotations = map[string]string{"pv.kubernetes.io/bind-completed": "yes"}
		src.ClaimList[1] = done
		return true, pv, nil
	})
	vb := &VolumeBinding{Sources: src, Client: client, Poll: time.Millisecond, Timeout: 10 * time.Second}
	if st := vb.PreBind(context.Background(), claimPod("new", "static"), node); !st.IsSuccess() {
		t.Fatalf("PreBind: %s", st.Message())
	}
	if selected != "a" {
		t.Errorf("selected-node = %q, want a", selected)
	}
	if boundVolume != "local-a->static" {
		t.Errorf("volume bound %q, want local-a->static", boundVolume)
	}
	// A claim that is never bound times out.
	src.ClaimList = append(src.ClaimList, pvc("stuck", "wffc", ""))
	src.ClaimList[2].Annotations = map[string]string{"volume.kubernetes.io/selected-node": "a"}
	vb.Timeout = 50 * time.Millisecond
	st := vb.PreBind(context.Background(), claimPod("stuck"), node)
	if want := `binding volumes: timed out waiting for persistentvolumeclaim "stuck" to be bound`; st.Message() != want {
		t.Errorf("PreBind of a claim never bound: %q, want %q", st.Message(), want)
	}
}

// A class's allowedTopologies admit a node when, in some term, every
// expression names a label the node has with one of its values (E.7).
func TestClassTopologyAllowsNode_E7(t *testing.T) {
	zone := func(values ...string) v1.TopologySelectorLabelRequirement {
		return v1.TopologySelectorLabelRequirement{Key: v1.LabelTopologyZone, Values: values}
	}
	rack := v1.TopologySelectorLabelRequirement{Key: "rack", Values: []string{"r1"}}
	terms := func(ts ...[]v1.TopologySelectorLabelRequirement) []v1.TopologySelectorTerm {
		var out []v1.TopologySelectorTerm
		for _, t := range ts {
			out = append(out, v1.TopologySelectorTerm{MatchLabelExpressions: t})
		}
		return out
	}
	inA := map[string]string{v1.LabelTopologyZone: "a", "rack": "r1"}
	for _, tc := range []struct {
		name  string
		terms []v1.TopologySelectorTerm
		node  map[string]string
		want  bool
	}{
		{"no terms", nil, nil, true},
		{"a value of the zone", terms([]v1.TopologySelectorLabelRequirement{zone("b", "a")}), inA, true},
		{"another zone", terms([]v1.TopologySelectorLabelRequirement{zone("b")}), inA, false},
		{"every expression of a term", terms([]v1.TopologySelectorLabelRequirement{zone("a"), rack}), inA, true},
		{"one expression fails the term", terms([]v1.TopologySelectorLabelRequirement{zone("a"), rack}), map[string]string{v1.LabelTopologyZone: "a"}, false},
		{"the second term", terms([]v1.TopologySelectorLabelRequirement{zone("b")}, []v1.TopologySelectorLabelRequirement{rack}), inA, true},
		{"a label the node lacks, an empty value", terms([]v1.TopologySelectorLabelRequirement{{Key: "rack", Values: []string{""}}}), nil, false},
	} {
		if got := topologyAllows(tc.terms, tc.node); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
