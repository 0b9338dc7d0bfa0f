package conformance

// controllerDifferences lists the scenarios of controllers_test.go where
// kubegate's controllers are known to behave differently from
// kube-controller-manager, each with what differs.
// TestControllersBehaveLikeKubeControllerManager fails on a scenario that
// differs and is not listed here, and on one listed here that no longer
// differs, so that the list only ever shrinks.
var controllerDifferences = map[string]string{
	"deployment-rollout-undo": "kubegate has no Deployment or ReplicaSet controller yet: no ReplicaSet, no pods",
	"replicaset-scale":        "kubegate has no ReplicaSet controller yet: no pods",
	"job-complete":            "kubegate has no Job controller yet: no pods",
	"job-backoff-limit":       "kubegate has no Job controller yet: no pods",
	"daemonset":               "kubegate has no DaemonSet controller yet, and does not serve ControllerRevisions",
	"statefulset":             "kubegate has no StatefulSet controller yet, and does not serve ControllerRevisions",
	"namespace-delete": "kubegate has no namespace controller yet: a deleted namespace is gone at once, without the Terminating " +
		"phase, its conditions and the kubernetes finalizer; and no kube-root-ca.crt ConfigMap is published in a new namespace",
	"delete-background": "kubegate has no ReplicaSet controller or garbage collector yet",
	"delete-foreground": "kubegate has no ReplicaSet controller or garbage collector yet",
	"delete-orphan":     "kubegate has no ReplicaSet controller or garbage collector yet",
	"endpointslices":    "kubegate has no EndpointSlice or Endpoints controller yet, and serves neither kind",
}
