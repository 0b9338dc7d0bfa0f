// Package metrics is the metrics server of the simulated nodes: it serves
// kube's resource metrics API, metrics.k8s.io/v1beta1 NodeMetrics and
// PodMetrics, as metrics-server does behind the aggregator, from usage
// that nodesim's pods are given rather than measured (I.4). A pod's
// containers use a share of their requests, the simulator's setting or
// the pod's annotations; a node uses what its running pods use plus a
// base. It authenticates the aggregator by its front-proxy client
// certificate and serves TLS with a certificate it makes itself, whose
// CA the APIService names (Register).
package metrics

import (
	"strconv"
	"strings"

	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// The annotations that set a pod's simulated usage, per container: a
// percentage of the container's request ("150%") or a quantity
// ("250m" of CPU, "300Mi" of memory). A pod template's annotations
// reach its pods, so a workload's load is raised by annotating its pods
// (at once) or its template (by a rollout).
const (
	CPUUsageAnnotation    = "nodesim.kubegate.io/cpu-usage"
	MemoryUsageAnnotation = "nodesim.kubegate.io/memory-usage"
)

// DefaultUsagePercent is a container's usage, as a percentage of its
// requests, when its pod does not say: half, an idle-ish service.
const DefaultUsagePercent = 50

// What a container that requests nothing of a resource is taken to
// request: about what an idle process takes.
var (
	unrequestedCPU    = resource.MustParse("10m")
	unrequestedMemory = resource.MustParse("16Mi")
)

// Defaults of a node's base usage, what the kubelet, the container
// runtime and the system take before any pod.
var (
	DefaultNodeBaseCPU    = resource.MustParse("100m")
	DefaultNodeBaseMemory = resource.MustParse("512Mi")
)

// usage is how a pod's containers use one resource: a percentage of
// their requests, or a fixed quantity each.
type usage struct {
	percent  int64
	quantity *resource.Quantity
}

// parseUsage reads an annotation's value; false when it is neither a
// non-negative percentage nor a non-negative quantity.
func parseUsage(v string) (usage, bool) {
	v = strings.TrimSpace(v)
	if p, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || n < 0 {
			return usage{}, false
		}
		return usage{percent: n}, true
	}
	q, err := resource.ParseQuantity(v)
	if err != nil || q.Sign() < 0 {
		return usage{}, false
	}
	return usage{quantity: &q}, true
}

// of is the usage of a container that requests req.
func (u usage) of(req resource.Quantity, milli bool) resource.Quantity {
	if u.quantity != nil {
		return u.quantity.DeepCopy()
	}
	// Exact decimal arithmetic: a huge request times a large percentage
	// does not overflow.
	d := new(inf.Dec).Mul(req.AsDec(), inf.NewDec(u.percent, 2))
	if milli {
		return *resource.NewDecimalQuantity(*d.Round(d, 3, inf.RoundDown), resource.DecimalSI)
	}
	return *resource.NewDecimalQuantity(*d.Round(d, 0, inf.RoundDown), resource.BinarySI)
}

// podUsage is the usage of each of pod's containers; defaultPercent
// applies to a resource its annotations do not set (or set to a value
// that does not parse).
func podUsage(pod *corev1.Pod, defaultPercent int64) []metricsv1beta1.ContainerMetrics {
	cpu, memory := usage{percent: defaultPercent}, usage{percent: defaultPercent}
	if u, ok := parseUsage(pod.Annotations[CPUUsageAnnotation]); ok {
		cpu = u
	}
	if u, ok := parseUsage(pod.Annotations[MemoryUsageAnnotation]); ok {
		memory = u
	}
	out := make([]metricsv1beta1.ContainerMetrics, 0, len(pod.Spec.Containers))
	for _, c := range pod.Spec.Containers {
		reqCPU, ok := c.Resources.Requests[corev1.ResourceCPU]
		if !ok {
			reqCPU = unrequestedCPU
		}
		reqMemory, ok := c.Resources.Requests[corev1.ResourceMemory]
		if !ok {
			reqMemory = unrequestedMemory
		}
		out = append(out, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: corev1.ResourceList{
			corev1.ResourceCPU:    cpu.of(reqCPU, true),
			corev1.ResourceMemory: memory.of(reqMemory, false),
		}})
	}
	return out
}

// sumUsage adds the usage of containers to total.
func sumUsage(total corev1.ResourceList, containers []metricsv1beta1.ContainerMetrics) {
	for _, c := range containers {
		for name, q := range c.Usage {
			t := total[name]
			t.Add(q)
			total[name] = t
		}
	}
}
