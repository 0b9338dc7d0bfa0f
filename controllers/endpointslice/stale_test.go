package endpointslice_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/controllers/endpointslice"
	"github.com/kubegate/kubegate/internal/testwait"
)

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A slice the controller created and that is deleted before the answer
// to the create reaches it (the delete event comes first) is not waited
// for: the controller makes the Service a new slice at once (G.10).
func TestSliceDeletedBeforeItsCreateIsAnsweredIsRemade_G10(t *testing.T) {
	s := apiservertest.Start(t)
	admin := s.Client
	factory := informers.NewSharedInformerFactory(admin, 0)
	deletes := make(chan string, 16)
	if _, err := factory.Discovery().V1().EndpointSlices().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj any) {
			if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
				deletes <- s.Name
			}
		}}); err != nil {
		t.Fatal(err)
	}

	// The first slice the controller creates is deleted, and its delete
	// event handled, before the controller hears the create succeeded.
	var once sync.Once
	// deleted is the first slice's name, sent once its delete event was
	// handled: the test waits for it, or it could see that slice before
	// the delete and end while the controller still waits.
	deleted := make(chan string, 1)
	cfg := rest.CopyConfig(s.Config)
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if err != nil || r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/endpointslices") || resp.StatusCode != http.StatusCreated {
				return resp, err
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return nil, err
			}
			resp.Body = io.NopCloser(bytes.NewReader(body))
			once.Do(func() {
				defer close(deleted)
				var created discoveryv1.EndpointSlice
				if err := json.Unmarshal(body, &created); err != nil {
					t.Errorf("decode the created slice: %v", err)
					return
				}
				if err := admin.DiscoveryV1().EndpointSlices(ns).Delete(context.Background(), created.Name, metav1.DeleteOptions{}); err != nil {
					t.Errorf("delete %s: %v", created.Name, err)
					return
				}
				for {
					select {
					case name := <-deletes:
						if name == created.Name {
							deleted <- name
							return
						}
					case <-time.After(30 * time.Second):
						t.Errorf("the informer never saw %s deleted", created.Name)
						return
					}
				}
			})
			return resp, nil
		})
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := endpointslice.New(client, factory, slog.New(slog.DiscardHandler))
	apiservertest.Run(t, func(ctx context.Context) error {
		factory.Start(ctx.Done())
		defer factory.Shutdown()
		return c.Run(ctx)
	})

	createPod(t, admin, "p1", "", "10.1.0.1", true)
	createService(t, admin, "web", map[string]string{"app": "web"}, "")
	var first string
	select {
	case first = <-deleted:
	case <-time.After(40 * time.Second):
		t.Fatal("the controller never created a slice")
	}
	if first == "" {
		t.Fatal("the first slice's delete was not seen")
	}
	// Well within the time a stale wait would give up after: a new slice.
	testwait.For(t, 20*time.Second, "a new slice of web", func() (bool, string) {
		slices := slicesOf(t, admin, "web")
		got := describe(slices)
		return got == "10.1.0.1:true/true/false" && len(slices) == 1 && slices[0].Name != first, got
	})
}
