package framework

import (
	v1 "k8s.io/api/core/v1"
)

// Scoring defaults for containers that request no cpu or memory: the
// scorers count such a container as this much, so that empty pods do not all
// pile onto one node (kube-scheduler's DefaultMilliCPURequest and
// DefaultMemoryRequest).
const (
	DefaultMilliCPURequest int64 = 100
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024
)

// Resource is an amount of every resource the scheduler accounts for. CPU
// is in millicores, memory and ephemeral storage in bytes. Scalar holds
// extended resources (vendor.com/gpu, hugepages-2Mi, ...) by name; nil means
// none.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	Pods             int64
	Scalar           map[v1.ResourceName]int64
}

// Get returns the amount of resource name.
func (r *Resource) Get(name v1.ResourceName) int64 {
	switch name {
	case v1.ResourceCPU:
		return r.MilliCPU
	case v1.ResourceMemory:
		return r.Memory
	case v1.ResourceEphemeralStorage:
		return r.EphemeralStorage
	case v1.ResourcePods:
		return r.Pods
	}
	return r.Scalar[name]
}

func (r *Resource) addList(l v1.ResourceList) {
	for name, q := range l {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		case v1.ResourcePods:
			r.Pods += q.Value()
		default:
			if r.Scalar == nil {
				r.Scalar = make(map[v1.ResourceName]int64, 1)
			}
			r.Scalar[name] += q.Value()
		}
	}
}

// add adds o to r, or subtracts it when sign is -1.
func (r *Resource) add(o *Resource, sign int64) {
	r.MilliCPU += sign * o.MilliCPU
	r.Memory += sign * o.Memory
	r.EphemeralStorage += sign * o.EphemeralStorage
	r.Pods += sign * o.Pods
	for name, v := range o.Scalar {
		if r.Scalar == nil {
			r.Scalar = make(map[v1.ResourceName]int64, len(o.Scalar))
		}
		r.Scalar[name] += sign * v
	}
}

func (r *Resource) max(o *Resource) {
	r.MilliCPU = max(r.MilliCPU, o.MilliCPU)
	r.Memory = max(r.Memory, o.Memory)
	r.EphemeralStorage = max(r.EphemeralStorage, o.EphemeralStorage)
	r.Pods = max(r.Pods, o.Pods)
	for name, v := range o.Scalar {
		if v > r.Scalar[name] {
			if r.Scalar == nil {
				r.Scalar = make(map[v1.ResourceName]int64, len(o.Scalar))
			}
			r.Scalar[name] = v
		}
	}
}

// ResourcesOf returns the resources in l.
func ResourcesOf(l v1.ResourceList) Resource {
	var r Resource
	r.addList(l)
	return r
}

// PodRequests returns what pod requests, the way the kubelet admits it: the
// sum over containers and restartable (sidecar) init containers, or the
// largest init container plus the sidecars started before it if that is
// more, plus the pod overhead. Pods is always 1.
//
// It also returns the cpu and memory requests with the scoring defaults
// applied to every container that leaves them unset.
func PodRequests(pod *v1.Pod) (req Resource, nonZeroCPU, nonZeroMem int64) {
	var sidecars, initMax Resource
	var nzSidecarCPU, nzSidecarMem, nzInitCPU, nzInitMem int64
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		req.addList(c.Resources.Requests)
		cpu, mem := nonZero(c.Resources.Requests)
		nonZeroCPU += cpu
		nonZeroMem += mem
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		r := ResourcesOf(c.Resources.Requests)
		cpu, mem := nonZero(c.Resources.Requests)
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			req.add(&r, 1)
			nonZeroCPU += cpu
			nonZeroMem += mem
			sidecars.add(&r, 1)
			nzSidecarCPU += cpu
			nzSidecarMem += mem
			initMax.max(&sidecars)
			nzInitCPU = max(nzInitCPU, nzSidecarCPU)
			nzInitMem = max(nzInitMem, nzSidecarMem)
			continue
		}
		r.add(&sidecars, 1)
		initMax.max(&r)
		nzInitCPU = max(nzInitCPU, cpu+nzSidecarCPU)
		nzInitMem = max(nzInitMem, mem+nzSidecarMem)
	}
	req.max(&initMax)
	nonZeroCPU = max(nonZeroCPU, nzInitCPU)
	nonZeroMem = max(nonZeroMem, nzInitMem)
	if pod.Spec.Overhead != nil {
		o := ResourcesOf(pod.Spec.Overhead)
		req.add(&o, 1)
		nonZeroCPU += o.MilliCPU
		nonZeroMem += o.Memory
	}
	req.Pods = 1
	return req, nonZeroCPU, nonZeroMem
}

// nonZero returns the cpu and memory requests of one container, with the
// scoring default for each that is absent (an explicit 0 stays 0).
func nonZero(l v1.ResourceList) (cpu, mem int64) {
	cpu, mem = DefaultMilliCPURequest, DefaultMemoryRequest
	if q, ok := l[v1.ResourceCPU]; ok {
		cpu = q.MilliValue()
	}
	if q, ok := l[v1.ResourceMemory]; ok {
		mem = q.Value()
	}
	return cpu, mem
}
