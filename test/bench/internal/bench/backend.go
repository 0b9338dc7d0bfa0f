package bench

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
)

// PodJSON is the body of every backend answer: a Running pod as an API
// server would return it, 470 bytes.
const PodJSON = `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"bench-7d9f8c6b5-x2x4q","namespace":"default","uid":"5c1e3a52-8f0e-4d6b-9a43-2f6d1e0b7c11","resourceVersion":"48213","creationTimestamp":"2026-01-01T00:00:00Z","labels":{"app":"bench"}},"spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{}}],"nodeName":"node-0001","serviceAccountName":"default"},"status":{"phase":"Running","podIP":"10.244.12.17","startTime":"2026-01-01T00:00:01Z"}}` + "\n"

// Stats is what the backend's GET /stats returns.
type Stats struct {
	// Requests counts every request except those to /stats.
	Requests uint64 `json:"requests"`
	// Spoofed counts requests with the spoof marker in an X-Remote-* value.
	Spoofed uint64 `json:"spoofed"`
	// NoUser counts requests that arrived without X-Remote-User.
	NoUser uint64 `json:"no_user"`
}

// Backend answers every request with PodJSON and reports the identity a
// proxy forwarded in response headers:
//
//	X-Seen-User   the X-Remote-User lines it received, joined with "|"
//	X-Seen-Group  the X-Remote-Group lines it received, joined with "|"
//
// Joining with "|" keeps one line "a,b" distinguishable from two lines "a"
// and "b". GET /stats returns Stats as JSON.
type Backend struct {
	marker                    string
	body                      []byte
	length                    []string
	requests, spoofed, noUser atomic.Uint64
}

// NewBackend returns a Backend that counts a request as spoofed when an
// X-Remote-* value contains marker, which must not be empty.
func NewBackend(marker string) *Backend {
	if marker == "" {
		panic("bench: empty spoof marker")
	}
	return &Backend{marker: marker, body: []byte(PodJSON), length: []string{strconv.Itoa(len(PodJSON))}}
}

// Stats returns the counters so far.
func (b *Backend) Stats() Stats {
	return Stats{Requests: b.requests.Load(), Spoofed: b.spoofed.Load(), NoUser: b.noUser.Load()}
}

func (b *Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/stats" {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(b.Stats())
		return
	}
	b.requests.Add(1)
	for k, vs := range r.Header {
		if !IsRemoteHeader(k) {
			continue
		}
		if containsMarker(vs, b.marker) {
			b.spoofed.Add(1)
			break
		}
	}
	users := r.Header.Values("X-Remote-User")
	if len(users) == 0 {
		b.noUser.Add(1)
	}
	h := w.Header()
	h["X-Seen-User"] = []string{strings.Join(users, "|")}
	h["X-Seen-Group"] = []string{strings.Join(r.Header.Values("X-Remote-Group"), "|")}
	h["Content-Type"] = []string{"application/json"}
	h["Content-Length"] = b.length
	_, _ = w.Write(b.body)
}

func containsMarker(vs []string, marker string) bool {
	for _, v := range vs {
		if strings.Contains(v, marker) {
			return true
		}
	}
	return false
}

// IsRemoteHeader reports whether the header name k starts with "X-Remote-",
// in any letter case.
func IsRemoteHeader(k string) bool {
	const prefix = "X-Remote-"
	return len(k) >= len(prefix) && strings.EqualFold(k[:len(prefix)], prefix)
}
