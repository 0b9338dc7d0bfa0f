package conformance

// controllerDifferences lists the scenarios of controllers_test.go where
// kubegate's controllers are known to behave differently from
// kube-controller-manager, each with what differs.
// TestControllersBehaveLikeKubeControllerManager fails on a scenario that
// differs and is not listed here, and on one listed here that no longer
// differs, so that the list only ever shrinks.
var controllerDifferences = map[string]string{}
