package authz

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/kubegate/kubegate/authn"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RequestInfo is what a request path and method say about the request,
// derived exactly as kube-apiserver derives it.
//
// For a resource request (/api/V/... or /apis/G/V/... with at least one
// more segment) APIPrefix is "api" or "apis", and Parts holds the path
// segments from the resource on (resource, name, subresource, and anything
// after, uninterpreted). For a non-resource request only Path and Verb
// (the lower-cased method) are set.
type RequestInfo struct {
	IsResourceRequest bool
	Path              string
	Verb              string

	APIPrefix   string
	APIGroup    string
	APIVersion  string
	Namespace   string
	Resource    string
	Subresource string
	Name        string
	Parts       []string
}

// Attributes returns the authorization attributes of the request made by u.
func (ri *RequestInfo) Attributes(u authn.User) Attributes {
	return Attributes{
		User:            u,
		Verb:            ri.Verb,
		Namespace:       ri.Namespace,
		APIGroup:        ri.APIGroup,
		APIVersion:      ri.APIVersion,
		Resource:        ri.Resource,
		Subresource:     ri.Subresource,
		Name:            ri.Name,
		ResourceRequest: ri.IsResourceRequest,
		Path:            ri.Path,
	}
}

var (
	// The old path-prefix verbs: /api/v1/watch/... and /api/v1/proxy/....
	pathVerbs = map[string]bool{"watch": true, "proxy": true}
	// Segments after namespaces/NAME that are the namespace's own
	// subresources rather than a namespaced resource.
	namespaceSubresources = map[string]bool{"status": true, "finalize": true}
)

// NewRequestInfo derives the RequestInfo of r from its method, URL path
// and, for list and watch, its query. The only error is for a path-prefix
// verb with nothing after it (/api/v1/watch), which kube-apiserver answers
// with 500; the returned RequestInfo then describes what was parsed.
func NewRequestInfo(r *http.Request) (*RequestInfo, error) {
	ri := &RequestInfo{
		Path: r.URL.Path,
		Verb: lowerMethod(r.Method),
	}

	parts := splitPath(r.URL.Path)
	if len(parts) < 3 || (parts[0] != "api" && parts[0] != "apis") {
		return ri, nil
	}
	ri.APIPrefix = parts[0]
	parts = parts[1:]
	if ri.APIPrefix == "apis" {
		if len(parts) < 3 {
			// /apis/G/V is a discovery document, not a resource.
			ri.APIPrefix = ""
			return ri, nil
		}
		ri.APIGroup = parts[0]
		parts = parts[1:]
	}
	ri.IsResourceRequest = true
	ri.APIVersion = parts[0]
	parts = parts[1:]

	viaPath := pathVerbs[parts[0]]
	if viaPath {
		if len(parts) < 2 {
			return ri, fmt.Errorf("request path %q: unable to determine kind and namespace", r.URL.Path)
		}
		ri.Verb = parts[0]
		parts = parts[1:]
	} else {
		switch r.Method {
		case http.MethodPost:
			ri.Verb = "create"
		case http.MethodGet, http.MethodHead:
			ri.Verb = "get"
		case http.MethodPut:
			ri.Verb = "update"
		case http.MethodPatch:
			ri.Verb = "patch"
		case http.MethodDelete:
			ri.Verb = "delete"
		default:
			ri.Verb = ""
		}
	}

	if parts[0] == "namespaces" {
		if len(parts) > 1 {
			ri.Namespace = parts[1]
			// namespaces/NS/RESOURCE/... is a namespaced resource; but
			// namespaces/NS, namespaces/NS/status and namespaces/NS/finalize
			// are the namespace object itself.
			if len(parts) > 2 && !namespaceSubresources[parts[2]] {
				parts = parts[2:]
			}
		}
	}
	ri.Parts = parts

	switch {
	case len(parts) >= 3 && ri.Verb != "proxy":
		ri.Subresource = parts[2]
		fallthrough
	case len(parts) >= 2:
		ri.Name = parts[1]
		fallthrough
	default:
		ri.Resource = parts[0]
	}

	if ri.Name == "" && ri.Verb == "get" {
		watch, name := listQuery(r)
		if watch {
			ri.Verb = "watch"
		} else {
			ri.Verb = "list"
		}
		ri.Name = name
	}
	if ri.Name == "" && ri.Verb == "delete" {
		ri.Verb = "deletecollection"
	}
	return ri, nil
}

// listQuery decodes the list options of a collection GET as
// kube-apiserver does: whether it is a watch, and the object name when
// the field selector requires metadata.name to equal one valid name. When
// the options do not decode, the request is still a watch if its first
// watch value is anything but "false" or "0", and has no name.
func listQuery(r *http.Request) (watch bool, name string) {
	q := r.URL.Query()
	if len(q) == 0 {
		return false, ""
	}
	var opts metainternalversion.ListOptions
	if err := metainternalversionscheme.ParameterCodec.DecodeParameters(q, metav1.SchemeGroupVersion, &opts); err != nil {
		if vs := q["watch"]; len(vs) > 0 {
			switch strings.ToLower(vs[0]) {
			case "false", "0":
			default:
				return true, ""
			}
		}
		return false, ""
	}
	if opts.FieldSelector != nil {
		if n, ok := opts.FieldSelector.RequiresExactMatch("metadata.name"); ok && len(content.IsPathSegmentName(n)) == 0 {
			name = n
		}
	}
	return opts.Watch, name
}

// lowerMethod is strings.ToLower without an allocation for the usual methods.
func lowerMethod(m string) string {
	switch m {
	case http.MethodGet:
		return "get"
	case http.MethodPost:
		return "post"
	case http.MethodPut:
		return "put"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	case http.MethodHead:
		return "head"
	case http.MethodOptions:
		return "options"
	}
	return strings.ToLower(m)
}

// splitPath returns the segments of p without leading and trailing
// slashes; "/" and "" have none.
func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

type requestInfoKey struct{}

// WithRequestInfo returns a copy of ctx carrying ri.
func WithRequestInfo(ctx context.Context, ri *RequestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, ri)
}

// RequestInfoFrom returns the RequestInfo stored in ctx.
func RequestInfoFrom(ctx context.Context) (*RequestInfo, bool) {
	ri, ok := ctx.Value(requestInfoKey{}).(*RequestInfo)
	return ri, ok && ri != nil
}
