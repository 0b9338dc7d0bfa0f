package gateway

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/internal/benchcpu"
)

const (
	benchServiceAccount = `{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"name":"default","namespace":"default","uid":"0b6b3c8e-6f0e-4a4e-9d8e-2f1c5d7e9a10","resourceVersion":"42","creationTimestamp":"2026-01-01T00:00:00Z"}}`
	benchReview         = `{"kind":"SubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{"nonResourceAttributes":{"path":"/metrics","verb":"get"},"user":"alice","groups":["devs"]},"status":{"allowed":true,"reason":"allowed by test"}}`
)

// cannedUpstream answers every request from memory with body, so that a
// benchmark measures the gateway's side of an upstream request only.
func cannedUpstream(code int, body string) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			_, _ = io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
		return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
	})
}

// BenchmarkUpstreamRequests measures the gateway's own requests to its
// upstream made on a client's request path, against an upstream in
// memory: a service-account lookup answered by the cache
// (op=lookup-cached) and one that reads the upstream (op=lookup-miss),
// and a SubjectAccessReview (op=review), which an impersonating request
// makes for each item it asks for and a read of /kubegate/metrics makes
// once. cpu-ns/op is the process's CPU time per operation.
func BenchmarkUpstreamRequests(b *testing.B) {
	up, _ := url.Parse("https://upstream.example")
	ctx := context.Background()
	lookup := func(b *testing.B, ttl time.Duration) {
		g := newGetter(b, up, cannedUpstream(http.StatusOK, benchServiceAccount), RequestHeaderIdentity, ttl)
		runOps(b, func() error {
			_, err := g.GetServiceAccount(ctx, "default", "default")
			return err
		})
	}
	b.Run("op=lookup-cached", func(b *testing.B) { lookup(b, time.Hour) })
	// A TTL of a nanosecond has run out by the next call.
	b.Run("op=lookup-miss", func(b *testing.B) { lookup(b, time.Nanosecond) })
	b.Run("op=review", func(b *testing.B) {
		s := newReviewer(b, up, cannedUpstream(http.StatusCreated, benchReview), RequestHeaderIdentity)
		a := authz.Attributes{User: authn.User{Name: "alice", Groups: []string{"devs"}}, Verb: "get", Path: "/metrics"}
		runOps(b, func() error {
			d, _, err := s.Authorize(ctx, a)
			if err == nil && d != authz.Allow {
				b.Fatalf("decision %v, want allow", d)
			}
			return err
		})
	})
}

func runOps(b *testing.B, op func() error) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start()
	for range b.N {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu.Report(b)
}
