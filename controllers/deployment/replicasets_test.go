package deployment

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func rolling(replicas int32, surge, unavailable string) *appsv1.Deployment {
	s, u := intstr.Parse(surge), intstr.Parse(unavailable)
	return &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &replicas, Strategy: appsv1.DeploymentStrategy{
		Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}}}}
}

// maxSurge rounds up, maxUnavailable down and never above replicas; both
// zero makes maxUnavailable 1; Recreate has neither.
func TestFenceposts_G3(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		d                   *appsv1.Deployment
		wantSurge, wantUnav int32
	}{
		{"defaults on 3", rolling(3, "25%", "25%"), 1, 0},
		{"defaults on 10", rolling(10, "25%", "25%"), 3, 2},
		{"absolute", rolling(10, "3", "2"), 3, 2},
		{"both zero", rolling(5, "0", "0"), 0, 1},
		{"unavailable above replicas", rolling(2, "0", "5"), 0, 2},
		{"zero replicas", rolling(0, "1", "1"), 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if s, u := maxSurge(tt.d), maxUnavailable(tt.d); s != tt.wantSurge || u != tt.wantUnav {
				t.Errorf("surge %d unavailable %d, want %d %d", s, u, tt.wantSurge, tt.wantUnav)
			}
		})
	}
	three := int32(3)
	re := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &three, Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}}
	if maxSurge(re) != 0 || maxUnavailable(re) != 0 {
		t.Errorf("Recreate: surge %d unavailable %d, want 0 0", maxSurge(re), maxUnavailable(re))
	}
}

// A rolled back ReplicaSet keeps its earlier revisions in its history,
// which drops its oldest entries to stay within 2000 characters.
func TestRevisionHistory_G3(t *testing.T) {
	t.Parallel()
	two := int32(2)
	d := rolling(2, "1", "0")
	d.Annotations = map[string]string{"kubernetes.io/change-cause": "undo", RevisionAnnotation: "9"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{RevisionAnnotation: "1"}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &two}}
	if !setNewAnnotations(d, rs, 3, true) {
		t.Fatal("nothing changed")
	}
	a := rs.Annotations
	if a[RevisionAnnotation] != "3" || a[RevisionHistoryAnnotation] != "1" || a["kubernetes.io/change-cause"] != "undo" {
		t.Errorf("annotations %v, want revision 3, history 1, the change cause copied", a)
	}
	if _, ok := a[DesiredReplicasAnnotation]; ok {
		t.Errorf("an existing ReplicaSet got replicas annotations from its revision sync")
	}
	setNewAnnotations(d, rs, 5, true)
	if a[RevisionHistoryAnnotation] != "1,3" {
		t.Errorf("history %q, want 1,3", a[RevisionHistoryAnnotation])
	}
	if setNewAnnotations(d, rs, 4, true) {
		t.Errorf("a lower revision changed the annotations")
	}

	long := strings.Repeat("1234,", 399) + "1234" // 1999 characters
	rs.Annotations[RevisionHistoryAnnotation] = long
	rs.Annotations[RevisionAnnotation] = "7"
	setNewAnnotations(d, rs, 8, true)
	got := rs.Annotations[RevisionHistoryAnnotation]
	if len(got) > maxRevisionHistoryChars || !strings.HasSuffix(got, ",7") || !strings.HasPrefix(got, "1234,") {
		t.Errorf("history of %d characters ending %q, want at most 2000 ending ,7", len(got), got[max(0, len(got)-10):])
	}
}

// Long Deployment names are cut so that NAME-HASH is a DNS subdomain.
func TestReplicaSetName_G3(t *testing.T) {
	t.Parallel()
	if got := replicaSetName("web", "5d4f8b"); got != "web-5d4f8b" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("a", 253)
	if got := replicaSetName(long, "5d4f8b"); len(got) != 253 || !strings.HasSuffix(got, "a-5d4f8b") {
		t.Errorf("got %d characters %q", len(got), got[240:])
	}
}

// Each ReplicaSet's share of a scale-up follows its size over the maximum
// it was last scaled under, bounded by what is left to hand out.
func TestProportion_G3(t *testing.T) {
	t.Parallel()
	d := rolling(20, "3", "2")
	rs := func(n int32, maxReplicas string) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{MaxReplicasAnnotation: maxReplicas}},
			Spec: appsv1.ReplicaSetSpec{Replicas: &n}}
	}
	if got := proportion(rs(8, "13"), d, 10, 0); got != 6 {
		t.Errorf("8 of 13 scaled to 23: +%d, want +6", got)
	}
	if got := proportion(rs(5, "13"), d, 10, 6); got != 4 {
		t.Errorf("5 of 13 scaled to 23 with 4 left: +%d, want +4", got)
	}
	if got := proportion(rs(5, "13"), d, 10, 8); got != 2 {
		t.Errorf("with 2 left: +%d, want +2", got)
	}
	down := rolling(5, "3", "2")
	if got := proportion(rs(8, "13"), down, -5, 0); got != -3 {
		t.Errorf("8 of 13 scaled to 8: %d, want -3", got)
	}
	if got := proportion(rs(0, "13"), d, 10, 0); got != 0 {
		t.Errorf("an empty ReplicaSet got %d", got)
	}
}
