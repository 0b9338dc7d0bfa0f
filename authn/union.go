package authn

import (
	"context"
	"net/http"
	"strings"
)

// Union returns a Request that asks each authenticator in order and returns
// the first success. An authenticator's error does not stop the search; the
// errors are returned together only when no authenticator succeeds.
func Union(rs ...Request) Request { return union(rs) }

// FailOnError returns a Request that asks each authenticator in order and
// stops at the first success or the first error. kube-apiserver uses it to
// put anonymous after the real authenticators, so that a bad credential is
// refused rather than treated as anonymous.
func FailOnError(rs ...Request) Request { return failOnError(rs) }

// UnionTokens is Union for token authenticators.
func UnionTokens(ts ...Token) Token { return unionTokens(ts) }

type (
	union       []Request
	failOnError []Request
	unionTokens []Token
)

var (
	_ Request = union(nil)
	_ Request = failOnError(nil)
	_ Token   = unionTokens(nil)
)

func (u union) AuthenticateRequest(r *http.Request) (*Response, bool, error) {
	var errs collector
	for _, a := range u {
		resp, ok, err := a.AuthenticateRequest(r)
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
