package customresource

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver"
	"github.com/kubegate/kubegate/store/bolt"
)

// installs records what Follow installs.
type installs struct {
	mu  sync.Mutex
	rs  map[string][]*apiserver.Resource
	chg chan struct{}
}

func (in *installs) SetResources(owner string, rs []*apiserver.Resource) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if rs == nil {
		delete(in.rs, owner)
	} else {
		in.rs[owner] = rs
	}
	select {
	case in.chg <- struct{}{}:
	default:
	}
	return nil
}

// waitFor waits until the installed resources of owner number n.
func (in *installs) waitFor(t *testing.T, owner string, n int) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		in.mu.Lock()
		got := len(in.rs[owner])
		in.mu.Unlock()
		if got == n {
			return
		}
		select {
		case <-in.chg:
		case <-deadline:
			t.Fatalf("%s: %d resources installed, want %d", owner, got, n)
		}
	}
}

func widgetCRD(established bool) *apiextensionsv1.CustomResourceDefinition {
	names := apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"}
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Names: names, Scope: apiextensionsv1.ClusterScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					XPreserveUnknownFields: new(true)}}}}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: names, StoredVersions: []string{"v1"}},
	}
	status := apiextensionsv1.ConditionFalse
	if established {
		status = apiextensionsv1.ConditionTrue
	}
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: status}}
	return crd
}

func TestFollowInstallsEstablishedDefinitions_I2(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithCancel(context.Background())
	key := apiserver.Key(crdsGVR, "", "widgets.example.com")
	put := func(crd *apiextensionsv1.CustomResourceDefinition) {
		data, _ := json.Marshal(crd)
		kv, err := st.Get(ctx, key)
		if err != nil {
			_, err = st.Create(ctx, key, data)
		} else {
			_, err = st.Update(ctx, key, data, kv.ModRevision)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	put(widgetCRD(true))
	in := &installs{rs: map[string][]*apiserver.Resource{}, chg: make(chan struct{}, 1)}
	done, err := Follow(ctx, st, in, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	in.waitFor(t, "widgets.example.com", 1) // installed before Follow returns
	put(widgetCRD(false))
	in.waitFor(t, "widgets.example.com", 0)
	put(widgetCRD(true))
	in.waitFor(t, "widgets.example.com", 1)
	kv, _ := st.Get(ctx, key)
	if _, _, err := st.Delete(ctx, key, kv.ModRevision); err != nil {
		t.Fatal(err)
	}
	in.waitFor(t, "widgets.example.com", 0)
	cancel()
	<-done
}
