package authn

import (
	"context"
	"net/http"
	"strings"
)

// Union returns a Request that asks each authenticator in order and returns
// the first success. An authenticator's error does not stop the search; the
// errors are returned together only when no authenticator succeeds.
//
// Authenticators implementing Prechecker that say a request cannot succeed
// with them are asked last, only for their error: the outcome is the same
// as asking in order, without their cost on the common path.
func Union(rs ...Request) Request {
	u := newUnion(rs)
	return &u
}

func newUnion(rs []Request) union {
	u := union{rs: rs}
	for i, a := range rs {
		if p, ok := a.(Prechecker); ok && i < 64 {
			u.pre = append(u.pre, indexedPrechecker{i, p})
		}
	}
	return u
}

// Prechecker is implemented by request authenticators that can tell
// cheaply that a request cannot succeed with them, for example a
// front-proxy authenticator when no username header is present.
// CanSucceed must not report false for a request it would authenticate.
type Prechecker interface {
	CanSucceed(r *http.Request) bool
}

type indexedPrechecker struct {
	i int
	p Prechecker
}

// FailOnError returns a Request that asks each authenticator in order and
// stops at the first success or the first error. kube-apiserver uses it to
// put anonymous after the real authenticators, so that a bad credential is
// refused rather than treated as anonymous.
func FailOnError(rs ...Request) Request { return failOnError(rs) }

// UnionTokens is Union for token authenticators.
func UnionTokens(ts ...Token) Token { return unionTokens(ts) }

type (
	union struct {
		rs  []Request
		pre []indexedPrechecker
	}
	failOnError []Request
	unionTokens []Token
)

var (
	_ Request = (*union)(nil)
	_ Request = failOnError(nil)
	_ Token   = unionTokens(nil)
)

func (u *union) AuthenticateRequest(r *http.Request) (*Response, bool, error) {
	var deferred uint64
	for _, p := range u.pre {
		if !p.p.CanSucceed(r) {
			deferred |= 1 << p.i
		}
	}
	var errs collector
	for i, a := range u.rs {
		if deferred&(1<<i) != 0 {
			continue
		}
		resp, ok, err := a.AuthenticateRequest(r)
		if err != nil {
			errs.add(err)
			continue
		}
		if ok {
			return resp, true, nil
		}
	}
	for i, a := range u.rs {
		if deferred&(1<<i) == 0 {
			continue
		}
		if _, _, err := a.AuthenticateRequest(r); err != nil {
			errs.add(err)
		}
	}
	return nil, false, errs.err()
}

func (u failOnError) AuthenticateRequest(r *http.Request) (*Response, bool, error) {
	for _, a := range u {
		resp, ok, err := a.AuthenticateRequest(r)
		if err != nil {
			return nil, false, err
		}
		if ok {
			return resp, true, nil
		}
	}
	return nil, false, nil
}

func (u unionTokens) AuthenticateToken(ctx context.Context, token string) (*Response, bool, error) {
	var errs collector
	for _, a := range u {
		resp, ok, err := a.AuthenticateToken(ctx, token)
		if err != nil {
			errs.add(err)
			continue
		}
		if ok {
			return resp, true, nil
		}
	}
	return nil, false, errs.err()
}

// Errors is the error of a union in which several authenticators failed.
// Its message lists each distinct message once, in order.
type Errors []error

func (e Errors) Error() string {
	seen := make(map[string]bool, len(e))
	var msgs []string
	for _, err := range e {
		m := err.Error()
		if !seen[m] {
			seen[m] = true
			msgs = append(msgs, m)
		}
	}
	if len(msgs) == 1 {
		return msgs[0]
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}

// Unwrap returns the individual errors, for errors.Is and errors.As.
func (e Errors) Unwrap() []error { return e }

// collector gathers a union's errors; it allocates only from the second.
type collector struct {
	first error
	all   Errors
}

func (c *collector) add(err error) {
	switch {
	case c.first == nil:
		c.first = err
	case c.all == nil:
		c.all = Errors{c.first, err}
	default:
		c.all = append(c.all, err)
	}
}

func (c *collector) err() error {
	if c.all != nil {
		return c.all
	}
	return c.first
}
