package serviceaccount

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"
)

// LegacyTokenInvalidSinceLabel on a token Secret invalidates its legacy
// token.
const LegacyTokenInvalidSinceLabel = "kubernetes.io/legacy-token-invalid-since"

// ErrNotFound is what a Getter should return (or wrap) for a missing
// object. Any Getter error rejects the token.
var ErrNotFound = errors.New("not found")

// Object is what the authenticator needs to know about a stored object.
type Object struct {
	UID string
	// DeletionTimestamp is when deletion of the object was requested; zero
	// means it is not being deleted.
	DeletionTimestamp time.Time
}

// Secret is a stored Secret as a legacy token check needs it.
type Secret struct {
	Object
	// Token is the Secret's data["token"].
	Token []byte
	// Labels of the Secret.
	Labels map[string]string
}

// Getter looks up the objects a token names, so that tokens of deleted or
// re-created objects are rejected. Implementations are typically backed by
// an object store or an informer cache, and must be safe for concurrent
// use.
type Getter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (Object, error)
	GetPod(ctx context.Context, namespace, name string) (Object, error)
	GetSecret(ctx context.Context, namespace, name string) (Secret, error)
	GetNode(ctx context.Context, name string) (Object, error)
}

// GetterFuncs adapts functions to Getter. A nil function reports ErrNotFound.
type GetterFuncs struct {
	ServiceAccount func(ctx context.Context, namespace, name string) (Object, error)
	Pod            func(ctx context.Context, namespace, name string) (Object, error)
	Secret         func(ctx context.Context, namespace, name string) (Secret, error)
	Node           func(ctx context.Context, name string) (Object, error)
}

var _ Getter = GetterFuncs{}

// GetServiceAccount calls f.ServiceAccount.
func (f GetterFuncs) GetServiceAccount(ctx context.Context, namespace, name string) (Object, error) {
	if f.ServiceAccount == nil {
		return Object{}, ErrNotFound
	}
	return f.ServiceAccount(ctx, namespace, name)
}

// GetPod calls f.Pod.
func (f GetterFuncs) GetPod(ctx context.Context, namespace, name string) (Object, error) {
	if f.Pod == nil {
		return Object{}, ErrNotFound
	}
	return f.Pod(ctx, namespace, name)
}

// GetSecret calls f.Secret.
func (f GetterFuncs) GetSecret(ctx context.Context, namespace, name string) (Secret, error) {
	if f.Secret == nil {
		return Secret{}, ErrNotFound
	}
	return f.Secret(ctx, namespace, name)
}

// GetNode calls f.Node.
func (f GetterFuncs) GetNode(ctx context.Context, name string) (Object, error) {
	if f.Node == nil {
		return Object{}, ErrNotFound
	}
	return f.Node(ctx, name)
}

// errInvalidated starts every error for a token whose bound objects are
// gone or changed.
const errInvalidated = "service account token has been invalidated"

// checkBound checks the objects a bound token names: the service account
// always, then the secret, pod or node it is bound to. An object whose
// deletion was requested more than leeway ago is treated as deleted. It
// returns the node name and UID to report.
func checkBound(ctx context.Context, g Getter, kc *kubeClaims, now time.Time, leeway time.Duration) error {
	deletedBefore := now.Add(-leeway)
	gone := func(o Object) bool {
		return !o.DeletionTimestamp.IsZero() && o.DeletionTimestamp.Before(deletedBefore)
	}
	ns, sa := kc.Namespace, kc.ServiceAccount
	o, err := g.GetServiceAccount(ctx, ns, sa.Name)
	if err != nil {
		return fmt.Errorf("%s: service account %s/%s: %w", errInvalidated, ns, sa.Name, err)
	}
	if gone(o) {
		return fmt.Errorf("%s: service account %s/%s has been deleted", errInvalidated, ns, sa.Name)
	}
	if o.UID != sa.UID {
		return fmt.Errorf("%s: service account UID (%s) does not match claim (%s)", errInvalidated, o.UID, sa.UID)
	}
	if r := kc.Secret; r != nil {
		s, err := g.GetSecret(ctx, ns, r.Name)
		if err != nil {
			return fmt.Errorf("%s: secret %s/%s: %w", errInvalidated, ns, r.Name, err)
		}
		if gone(s.Object) {
			return fmt.Errorf("%s: secret %s/%s has been deleted", errInvalidated, ns, r.Name)
		}
		if s.UID != r.UID {
			return fmt.Errorf("%s: secret UID (%s) does not match claim (%s)", errInvalidated, s.UID, r.UID)
		}
	}
	if r := kc.Pod; r != nil {
		p, err := g.GetPod(ctx, ns, r.Name)
		if err != nil {
			return fmt.Errorf("%s: pod %s/%s: %w", errInvalidated, ns, r.Name, err)
		}
		if gone(p) {
			return fmt.Errorf("%s: pod %s/%s has been deleted", errInvalidated, ns, r.Name)
		}
		if p.UID != r.UID {
			return fmt.Errorf("%s: pod UID (%s) does not match claim (%s)", errInvalidated, p.UID, r.UID)
		}
	} else if r := kc.Node; r != nil {
		// A pod-bound token's node is informational; a token bound to a
		// node alone is checked against the node.
		n, err := g.GetNode(ctx, r.Name)
		if err != nil {
			return fmt.Errorf("%s: node %s: %w", errInvalidated, r.Name, err)
		}
		if gone(n) {
			return fmt.Errorf("%s: node %s has been deleted", errInvalidated, r.Name)
		}
		if n.UID != r.UID {
			return fmt.Errorf("%s: node UID (%s) does not match claim (%s)", errInvalidated, n.UID, r.UID)
		}
	}
	return nil
}

// checkLegacy checks a legacy token against its Secret and service
// account: both must exist and not be deleting, the Secret must hold this
// very token and not be marked invalid, and the UID must match.
func checkLegacy(ctx context.Context, g Getter, c *claims, token string) error {
	ns := c.LegacyNamespace
	s, err := g.GetSecret(ctx, ns, c.LegacySecretName)
	if err != nil {
		return fmt.Errorf("%s: secret %s/%s: %w", errInvalidated, ns, c.LegacySecretName, err)
	}
	if !s.DeletionTimestamp.IsZero() {
		return fmt.Errorf("%s: secret %s/%s is being deleted", errInvalidated, ns, c.LegacySecretName)
	}
	if subtle.ConstantTimeCompare(s.Token, []byte(token)) != 1 {
		return errors.New("service account token does not match the server's copy")
	}
	if _, ok := s.Labels[LegacyTokenInvalidSinceLabel]; ok {
		return fmt.Errorf("%s: secret %s/%s is labelled %s", errInvalidated, ns, c.LegacySecretName, LegacyTokenInvalidSinceLabel)
	}
	o, err := g.GetServiceAccount(ctx, ns, c.LegacySAName)
	if err != nil {
		return fmt.Errorf("%s: service account %s/%s: %w", errInvalidated, ns, c.LegacySAName, err)
	}
	if !o.DeletionTimestamp.IsZero() {
		return fmt.Errorf("%s: service account %s/%s has been deleted", errInvalidated, ns, c.LegacySAName)
	}
	if o.UID != c.LegacySAUID {
		return fmt.Errorf("%s: service account UID (%s) does not match claim (%s)", errInvalidated, o.UID, c.LegacySAUID)
	}
	return nil
}
