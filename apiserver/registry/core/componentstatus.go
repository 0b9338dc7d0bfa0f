package core

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubegate/kubegate/apiserver"
)

// componentStatusesGVR is the deprecated, read-only view of the control
// plane's health (D.14).
var componentStatusesGVR = corev1.SchemeGroupVersion.WithResource("componentstatuses")

// componentStatusDeprecation is the warning kube-apiserver gives on every
// request for componentstatuses.
const componentStatusDeprecation = "v1 ComponentStatus is deprecated in v1.19+"

// ComponentProbe is one component componentstatuses reports: Probe
// returns whether it is healthy, the message and the error kube reports.
type ComponentProbe struct {
	Name  string
	Probe func(req *apiserver.Request) (corev1.ConditionStatus, string, string)
}

// DefaultComponents are the components kube-apiserver reports: the
// scheduler's and the controller manager's /healthz on their default
// secure ports of this host, and the store as etcd-0, healthy while it
// answers a read.
func DefaultComponents() []ComponentProbe {
	return []ComponentProbe{
		{Name: "scheduler", Probe: probeHTTPS("https://127.0.0.1:10259/healthz")},
		{Name: "controller-manager", Probe: probeHTTPS("https://127.0.0.1:10257/healthz")},
		{Name: "etcd-0", Probe: probeStore},
	}
}

// componentStatusResource serves ComponentStatuses as kube-apiserver
// does: cluster-scoped, short name "cs", get and list only, each answer
// with the deprecation warning, kube's Table.
func componentStatusResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: componentStatusesGVR, Kind: "ComponentStatus", Singular: "componentstatus", ShortNames: []string{"cs"},
		Deprecation: componentStatusDeprecation, Table: componentStatusTable,
		Subresources: map[string]apiserver.Subresource{"": componentStatuses{components: DefaultComponents()}}}
}

type componentStatuses struct{ components []ComponentProbe }

func (componentStatuses) Name() string                  { return "" }
func (componentStatuses) Verbs() []string               { return []string{"get", "list"} }
func (componentStatuses) Kind() schema.GroupVersionKind { return schema.GroupVersionKind{} }
func (componentStatuses) AcceptsAny() bool              { return false }

// Serve probes the named component, or every one for a list (those its
// selectors match, on metadata.name and labels), at once.
func (c componentStatuses) Serve(req *apiserver.Request) error {
	if err := req.AuthorizeAs(req.Verb()); err != nil {
		return err
	}
	if req.Verb() == "get" {
		i := slices.IndexFunc(c.components, func(p ComponentProbe) bool { return p.Name == req.Name() })
		if i < 0 {
			return apierrors.NewNotFound(corev1.Resource("componentstatus"), req.Name())
		}
		cs := componentStatus(req, c.components[i])
		cs.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ComponentStatus"}
		return req.WriteConverted(http.StatusOK, cs)
	}
	_, r := req.HTTP()
	fsel, err := fields.ParseSelector(r.URL.Query().Get("fieldSelector"))
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	lsel, err := labels.Parse(r.URL.Query().Get("labelSelector"))
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	statuses := make([]corev1.ComponentStatus, len(c.components))
	var wg sync.WaitGroup
	for i, p := range c.components {
		wg.Go(func() { statuses[i] = *componentStatus(req, p) })
	}
	wg.Wait()
	list := &corev1.ComponentStatusList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ComponentStatusList"}, Items: []corev1.ComponentStatus{}}
	for _, s := range statuses {
		if fsel.Matches(fields.Set{"metadata.name": s.Name, "metadata.namespace": ""}) && lsel.Matches(labels.Set(s.Labels)) {
			list.Items = append(list.Items, s)
		}
	}
	return req.WriteConverted(http.StatusOK, list)
}

func componentStatus(req *apiserver.Request, p ComponentProbe) *corev1.ComponentStatus {
	status, msg, errMsg := p.Probe(req)
	return &corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: p.Name},
		Conditions: []corev1.ComponentCondition{{Type: corev1.ComponentHealthy, Status: status, Message: msg, Error: errMsg}}}
}

// probeTimeout is kube's: a component that does not answer in 20 s is
// unhealthy.
const probeTimeout = 20 * time.Second

// probeHTTPS probes url as kube's HTTP probe does, trusting any
// certificate (a component's serving certificate is its own): a 2xx
// answer is healthy with its body as the message, anything else
// unhealthy, a failed request with its error as the message.
func probeHTTPS(url string) func(*apiserver.Request) (corev1.ConditionStatus, string, string) {
	client := &http.Client{Timeout: probeTimeout, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a health probe, as kube's
		DisableKeepAlives: true,
	}}
	return func(req *apiserver.Request) (corev1.ConditionStatus, string, string) {
		r, err := http.NewRequestWithContext(req.Context(), http.MethodGet, url, nil)
		if err != nil {
			return corev1.ConditionUnknown, "", "failed to construct probe request: " + err.Error()
		}
		r.Header.Set("User-Agent", "kube-probe/1.37")
		r.Header.Set("Accept", "*/*")
		resp, err := client.Do(r)
		if err != nil {
			return corev1.ConditionFalse, err.Error(), ""
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 10*1024))
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return corev1.ConditionTrue, string(body), ""
		case resp.StatusCode >= 300 && resp.StatusCode < 400:
			return corev1.ConditionUnknown, "Probe terminated redirects, Response body: " + string(body), ""
		}
		return corev1.ConditionFalse, "HTTP probe failed with statuscode: " + strconv.Itoa(resp.StatusCode), ""
	}
}

// probeStore reads the default namespace: the store answers, healthy.
func probeStore(req *apiserver.Request) (corev1.ConditionStatus, string, string) {
	_, err := req.Get(corev1.SchemeGroupVersion.WithResource("namespaces"), "", metav1.NamespaceDefault)
	if err != nil && !apierrors.IsNotFound(err) && !errors.Is(err, context.Canceled) {
		return corev1.ConditionFalse, "", err.Error()
	}
	return corev1.ConditionTrue, "ok", ""
}

var componentStatusTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "Status", Type: "string", Description: "Status of the component conditions"},
		{Name: "Message", Type: "string", Description: "Message of the component conditions"},
		{Name: "Error", Type: "string", Description: "Error of the component conditions"}},
	Cells: func(obj runtime.Object, _ time.Time) []any {
		cs := obj.(*corev1.ComponentStatus)
		status, msg, errMsg := "Unknown", "", ""
		for _, c := range cs.Conditions {
			if c.Type == corev1.ComponentHealthy {
				status = "Unhealthy"
				if c.Status == corev1.ConditionTrue {
					status = "Healthy"
				}
				msg, errMsg = c.Message, c.Error
				break
			}
		}
		return []any{cs.Name, status, msg, errMsg}
	},
}
