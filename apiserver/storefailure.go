package apiserver

import (
	"errors"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/store"
)

// msgMaybeApplied is the message of a write the store sent again after
// its etcd member stopped answering, and whose outcome it could not tell
// (J.4).
const msgMaybeApplied = "the write may have been applied: etcd stopped answering after it was sent; read the object to learn whether it was"

// storeFailure returns the Status of a failure of the store itself, as
// kube-apiserver answers an etcd fault: 500, no reason, and etcd's own
// message, never the key or etcd's address (J.4). ok is false for any
// other error.
func storeFailure(err error) (_ metav1.Status, ok bool) {
	var ue *store.UnavailableError
	switch {
	case errors.Is(err, store.ErrMaybeApplied):
		return metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: msgMaybeApplied}, true
	case errors.As(err, &ue):
		return metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: ue.Reason}, true
	}
	return metav1.Status{}, false
}
