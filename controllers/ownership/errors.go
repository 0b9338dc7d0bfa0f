package ownership

import apierrors "k8s.io/apimachinery/pkg/api/errors"

// isGone reports whether err says the object is no longer there to patch
// (deleted, or replaced by one with another UID).
func isGone(err error) bool {
	return apierrors.IsNotFound(err) || apierrors.IsConflict(err) || apierrors.IsInvalid(err)
}
