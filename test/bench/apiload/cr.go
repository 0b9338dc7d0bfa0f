package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// Kinds of object a run creates and lists.
const (
	kindPods = "pods"
	kindCR   = "cr" // custom resources of crd.yaml, JSON only
)

// crdYAML is the CustomResourceDefinition of the custom-resource runs.
//
//go:embed crd.yaml
var crdYAML []byte

// widgets is the resource crd.yaml defines.
var widgets = schema.GroupVersionResource{Group: "bench.kubegate.io", Version: "v1", Resource: "widgets"}

// benchCRD returns crd.yaml's definition.
func benchCRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(crdYAML, &crd); err != nil {
		return nil, fmt.Errorf("crd.yaml: %w", err)
	}
	return &crd, nil
}

// widget returns the custom resource the benchmark creates: the typed
// fields set, replicas and maxReplicas left to the schema's defaults, so
// that every create is defaulted, validated against the pattern and the
// enum, and checked by both CEL rules.
func widget(name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgets.GroupVersion().String(),
		"kind":       "Widget",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"image": "registry.k8s.io/pause:3.10", "size": "medium", "port": int64(8080)},
	}}
	u.SetLabels(labels)
	return u
}

// applyCRD creates the definition (or finds it) and waits until the
// server has it Established and serves its custom resources.
func (r *runner) applyCRD(ctx context.Context) error {
	crd, err := benchCRD()
	if err != nil {
		return err
	}
	c, err := apiextensionsclient.NewForConfig(r.rest)
	if err != nil {
		return err
	}
	crds := c.ApiextensionsV1().CustomResourceDefinitions()
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create CRD %s: %w", crd.Name, err)
	}
	dc, err := dynamic.NewForConfig(r.rest)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(r.cfg.readyTimeout)
	for {
		got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
		if err == nil && established(got) {
			// A server may answer for the definition a moment before it
			// serves what it defines.
			if _, err = dc.Resource(widgets).Namespace(r.cfg.namespace).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("CRD %s not Established after %v (%v)", crd.Name, r.cfg.readyTimeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// crCreator is a creator of widgets on a dynamic client (JSON) of its own.
func (r *runner) crCreator() (creator, error) {
	cfg := r.ownConn()
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return creator{}, err
	}
	return creator{
		create: func(ctx context.Context, namespace, name string, labels map[string]string) error {
			_, err := dc.Resource(widgets).Namespace(namespace).Create(ctx, widget(name, labels), metav1.CreateOptions{})
			return err
		},
		warm: func(ctx context.Context) error {
			_, err := dc.Resource(widgets).Namespace(r.cfg.namespace).List(ctx, metav1.ListOptions{Limit: 1})
			return err
		},
	}, nil
}

// countItems returns the number of items of a JSON list.
func countItems(body []byte) (string, int, error) {
	var l struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return "", 0, err
	}
	return l.Kind, len(l.Items), nil
}
