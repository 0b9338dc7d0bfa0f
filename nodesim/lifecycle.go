package nodesim

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The annotations that set a simulated pod's lifecycle
// (docs/kubernetes-behaviour.md, G.13). A pod without one gets its
// node's default from Options.
const (
	// AnnotationReadyAfter: how long after its containers start the pod
	// becomes Ready (a Go duration, "10s").
	AnnotationReadyAfter = "nodesim.kubegate.io/ready-after"
	// AnnotationCompleteAfter: how long after they start its containers
	// exit (a Go duration).
	AnnotationCompleteAfter = "nodesim.kubegate.io/complete-after"
	// AnnotationExitCode: the code they exit with, 0 to 255.
	AnnotationExitCode = "nodesim.kubegate.io/exit-code"
)

// lifecycle is what a running pod does: when it becomes ready and, if
// complete, when its containers exit and with what code.
type lifecycle struct {
	readyAfter    time.Duration
	complete      bool
	completeAfter time.Duration
	exitCode      int32
}

// lifecycle reads pod's annotations over the node defaults. A value that
// does not parse is logged once per pod and annotation and ignored.
func (p *podSync) lifecycle(pod *corev1.Pod) lifecycle {
	o := p.s.opts
	lc := lifecycle{readyAfter: o.ReadyAfter, complete: o.CompleteAfter > 0, completeAfter: o.CompleteAfter, exitCode: o.ExitCode}
	if !lc.complete && o.PodRunTime > 0 && pod.Spec.RestartPolicy != corev1.RestartPolicyAlways && pod.Spec.RestartPolicy != "" {
		// A pod meant to finish (a Job's, a test's) does after its run time.
		lc.complete, lc.completeAfter = true, o.PodRunTime
	}
	if v, ok := pod.Annotations[AnnotationReadyAfter]; ok {
		if d, err := parseDelay(v); err != nil {
			p.warnOnce(pod, AnnotationReadyAfter, v, err)
		} else {
			lc.readyAfter = d
		}
	}
	if v, ok := pod.Annotations[AnnotationCompleteAfter]; ok {
		if d, err := parseDelay(v); err != nil {
			p.warnOnce(pod, AnnotationCompleteAfter, v, err)
		} else {
			lc.complete, lc.completeAfter = true, d
		}
	}
	if v, ok := pod.Annotations[AnnotationExitCode]; ok {
		if c, err := parseExitCode(v); err != nil {
			p.warnOnce(pod, AnnotationExitCode, v, err)
		} else {
			lc.exitCode = c
		}
	}
	return lc
}

func parseDelay(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("not a duration (examples: 10s, 1m30s)")
	}
	if d < 0 {
		return 0, fmt.Errorf("must not be negative")
	}
	return d, nil
}

func parseExitCode(v string) (int32, error) {
	c, err := strconv.ParseInt(v, 10, 32)
	if err != nil || c < 0 || c > 255 {
		return 0, fmt.Errorf("want an integer from 0 to 255")
	}
	return int32(c), nil
}

// warnOnce logs a bad annotation value the first time it is seen on pod.
func (p *podSync) warnOnce(pod *corev1.Pod, key, value string, err error) {
	p.mu.Lock()
	k := warnKey{pod.UID, key}
	seen := p.warned[k]
	p.warned[k] = true
	p.mu.Unlock()
	if !seen {
		p.s.log.Warn("simulated pod: annotation ignored", "pod", pod.Namespace+"/"+pod.Name, "annotation", key,
			"value", value, "err", err)
	}
}

type warnKey struct {
	uid types.UID
	key string
}

// restarts reports whether the kubelet would restart containers that
// exited with code under the pod's restart policy.
func restarts(pod *corev1.Pod, code int32) bool {
	switch pod.Spec.RestartPolicy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return code != 0
	}
	return true // Always, and the unset policy the API server defaults to it
}
