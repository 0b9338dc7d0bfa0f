package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// NewRecorder returns a recorder of core v1 Events from component (the
// source kube's controllers name, such as "node-controller"), written
// through client, and the function that stops it. Events go out in the
// background, aggregated and rate-limited as client-go's broadcaster
// does, so a controller never waits for one.
func NewRecorder(client kubernetes.Interface, component string) (record.EventRecorder, func()) {
	rec, start := NewLazyRecorder(client, component)
	return rec, start()
}

// NewLazyRecorder is NewRecorder for a controller that builds its
// recorder with itself, in its constructor: nothing goes out until start
// is called, in the controller's Run, and start returns the function that
// stops the recorder.
func NewLazyRecorder(client kubernetes.Interface, component string) (rec record.EventRecorder, start func() (stop func())) {
	b := record.NewBroadcaster()
	start = func() func() {
		b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
		return b.Shutdown
	}
	return b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component}), start
}
