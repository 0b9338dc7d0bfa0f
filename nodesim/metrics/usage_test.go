package metrics

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzPodUsage holds that any annotation value gives a usage, never a
// panic, and never a negative one (I.4).
func FuzzPodUsage(f *testing.F) {
	for _, v := range []string{"", "150%", "250m", "1Gi", "-1", "%", "9999999999%", "1e400", " 5 % ", "0x10", "2000000000%"} {
		f.Add(v, v)
	}
	f.Fuzz(func(t *testing.T, cpu, memory string) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{CPUUsageAnnotation: cpu, MemoryUsageAnnotation: memory}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}, {Name: "b"}}}}
		for _, c := range podUsage(pod, DefaultUsagePercent) {
			for name, q := range c.Usage {
				if q.Sign() < 0 {
					t.Errorf("%s of %s: got %s for %q/%q", name, c.Name, q.String(), cpu, memory)
				}
			}
		}
	})
}
