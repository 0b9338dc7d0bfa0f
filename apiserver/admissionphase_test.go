package apiserver

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/warning"

	"github.com/kubegate/kubegate/internal/testwait"
)

// phases records the order of the two admission phases and refuses pods
// named "refuse" in the validating one.
type phases struct {
	seen   []string
	lister Lister
}

func (p *phases) Admit(_ context.Context, a *AdmissionAttributes) error {
	if a.Resource.Resource == "pods" {
		p.seen = append(p.seen, "admit")
	}
	return nil
}

func (p *phases) Validate(ctx context.Context, a *AdmissionAttributes) error {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	// The server's own fields are set by now (D.8).
	p.seen = append(p.seen, "validate:"+string(pod.Status.Phase)+":"+a.Kind.Kind)
	warning.AddWarning(ctx, "", "seen by validate")
	warning.AddWarning(ctx, "", "seen by validate")
	if pod.Name == "refuse" {
		return apierrors.NewForbidden(a.Resource.GroupResource(), pod.Name, errRefused)
	}
	return nil
}

func (p *phases) SetLister(l Lister) { p.lister = l }

var errRefused = errors.New("refused")

func TestValidatingAdmissionRunsAfterValidation_D8(t *testing.T) {
	t.Parallel()
	p := &phases{}
	ts := newTestServer(t, func(c *Config) { c.Admission = []Admission{p} })
	if p.lister == nil {
		t.Fatal("New did not give the plugin a Lister")
	}
	// An invalid pod is refused by validation; Validate never sees it.
	code, _ := ts.send(t, "POST", "/api/v1/namespaces/default/pods", "", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad"},"spec":{"containers":[]}}`)
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("invalid pod: got %d, want 422", code)
	}
	if want := []string{"admit"}; !slices.Equal(p.seen, want) {
		t.Fatalf("phases: got %v, want %v", p.seen, want)
	}
	p.seen = nil
	req, _ := http.NewRequest("POST", ts.http.URL+"/api/v1/namespaces/default/pods", strings.NewReader(string(mustJSON(testPod("ok")))))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("valid pod: got %d, want 201", resp.StatusCode)
	}
	if want := []string{"admit", "validate:Pending:Pod"}; !slices.Equal(p.seen, want) {
		t.Errorf("phases: got %v, want %v", p.seen, want)
	}
	if got, want := resp.Header.Values("Warning"), []string{`299 - "seen by validate"`}; !slices.Equal(got, want) {
		t.Errorf("Warning headers: got %q, want %q", got, want)
	}
	code, _ = ts.send(t, "POST", "/api/v1/namespaces/default/pods", "", string(mustJSON(testPod("refuse"))))
	if code != http.StatusForbidden {
		t.Errorf("refused pod: got %d, want 403", code)
	}
}

func TestWarningRecorder_D8(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 300)
	tests := []struct {
		name  string
		texts []string
		want  []string
	}{
		{"quoted and escaped", []string{`say "hi" \ there`}, []string{`299 - "say \"hi\" \\ there"`}},
		{"each text once, empty dropped", []string{"a", "", "b", "a"}, []string{`299 - "a"`, `299 - "b"`}},
		{"control characters dropped", []string{"bad\x01", "good"}, []string{`299 - "good"`}},
		{"over 4096 characters everything is cut to 256", []string{long + "1", long + "2", strings.Repeat("y", 4000)}, []string{`299 - "` + long[:256] + `"`, `299 - "` + long[:256] + `"`, `299 - "` + strings.Repeat("y", 256) + `"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			r := withWarnings(w, httptest.NewRequest("POST", "/", nil))
			for _, text := range tt.texts {
				warning.AddWarning(r.Context(), "", text)
			}
			if got := w.Header().Values("Warning"); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// The server's Lister sees namespaces and limit ranges a moment after
// they are written, and reads a namespace it has not seen yet from the
// store (D.8).
func TestListerFollowsTheStore_D8(t *testing.T) {
	t.Parallel()
	p := &phases{}
	ts := newTestServer(t, func(c *Config) { c.Admission = []Admission{p} })
	cs := ts.clientset(t, false)
	ctx := context.Background()
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"a": "b"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.lister.GetNamespace(ctx, "team")
	if err != nil || got.Labels["a"] != "b" {
		t.Fatalf("GetNamespace: got %v, %v; want the namespace", got, err)
	}
	if _, err := p.lister.GetNamespace(ctx, "missing"); !apierrors.IsNotFound(err) {
		t.Errorf("GetNamespace of a missing namespace: got %v, want NotFound", err)
	}
	for _, name := range []string{"b", "a"} {
		if _, err := cs.CoreV1().LimitRanges(ns.Name).Create(ctx, &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, 5*time.Second, "both limit ranges in the cache", func() (bool, string) {
		return len(p.lister.LimitRanges("team")) == 2, ""
	})
	var names []string
	for _, lr := range p.lister.LimitRanges("team") {
		names = append(names, lr.Name)
	}
	if want := []string{"a", "b"}; !slices.Equal(names, want) {
		t.Errorf("LimitRanges: got %v, want %v", names, want)
	}
	if lrs := p.lister.LimitRanges("default"); lrs != nil {
		t.Errorf("LimitRanges of a namespace without any: got %v, want nil", lrs)
	}
}

func TestAdmissionReinvocation_D8(t *testing.T) {
	t.Parallel()
	var passes []string
	first := AdmissionFunc(func(_ context.Context, a *AdmissionAttributes) error {
		if a.Resource.Resource == "configmaps" {
			passes = append(passes, "first:"+strconv.FormatBool(a.Reinvocation))
		}
		return nil
	})
	// The second asks for one more pass, every time: the server gives one.
	second := AdmissionFunc(func(_ context.Context, a *AdmissionAttributes) error {
		if a.Resource.Resource == "configmaps" {
			passes = append(passes, "second:"+strconv.FormatBool(a.Reinvocation))
			a.Reinvoke = true
		}
		return nil
	})
	ts := newTestServer(t, func(c *Config) { c.Admission = []Admission{first, second} })
	code, body := ts.send(t, "POST", "/api/v1/namespaces/default/configmaps", "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: got %d %s, want 201", code, body)
	}
	if want := []string{"first:false", "second:false", "first:true", "second:true"}; !slices.Equal(passes, want) {
		t.Fatalf("passes: got %v, want %v", passes, want)
	}
}
