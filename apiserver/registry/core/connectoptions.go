package core

import (
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// connectOptions returns the options of a connect to pods/sub, read from
// its query as kube-apiserver reads them, for admission (D.13): a flag is
// set unless its first value is "false" or "0", a list takes every value.
func connectOptions(sub string, q url.Values) runtime.Object {
	flag := func(key string) bool {
		v := q[key]
		if len(v) == 0 {
			return false
		}
		switch strings.ToLower(v[0]) {
		case "false", "0":
			return false
		}
		return true
	}
	typeMeta := func(kind string) metav1.TypeMeta {
		return metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: kind}
	}
	switch sub {
	case "exec":
		return &corev1.PodExecOptions{TypeMeta: typeMeta("PodExecOptions"), Stdin: flag("stdin"), Stdout: flag("stdout"), Stderr: flag("stderr"),
			TTY: flag("tty"), Container: q.Get("container"), Command: q["command"]}
	case "attach":
		return &corev1.PodAttachOptions{TypeMeta: typeMeta("PodAttachOptions"), Stdin: flag("stdin"), Stdout: flag("stdout"), Stderr: flag("stderr"),
			TTY: flag("tty"), Container: q.Get("container")}
	}
	opts := &corev1.PodPortForwardOptions{TypeMeta: typeMeta("PodPortForwardOptions")}
	for _, p := range q["ports"] {
		if n, err := strconv.ParseInt(p, 10, 32); err == nil {
			opts.Ports = append(opts.Ports, int32(n))
		}
	}
	return opts
}
