package job

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// newRecorder returns a broadcaster, started by startEvents, and a
// recorder of events from component, as kube's controllers record them
// (core/v1 Events, similar ones aggregated).
func newRecorder(component string) (record.EventBroadcaster, record.EventRecorder) {
	b := record.NewBroadcaster()
	return b, b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
}

// startEvents sends b's events to the API server until stop is called.
func startEvents(b record.EventBroadcaster, client kubernetes.Interface) (stop func()) {
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	return b.Shutdown
}
