package admission_test

import (
	"context"
	"net/http"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authz"
	"github.com/kubegate/kubegate/internal/testpki"
)

// kube's ClusterTrustBundleAttest skips the attest check on an update that
// changes only owner references and finalizers (rbac.IsOnlyMutatingGCFields,
// which also ignores managedFields): a garbage collector that may update
// bundles but not attest removes a finalizer.
func TestClusterTrustBundleAttestLetsGCUpdatesThrough_H8(t *testing.T) {
	az := authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		if a.User.Name == "gc" && a.Resource == "clustertrustbundles" {
			return authz.Allow, "", nil
		}
		return authz.NoOpinion, "", nil
	})
	srv := apiservertest.Start(t, apiservertest.WithUsers(map[string]authn.User{"gc": {Name: "gc", Groups: []string{authn.AllAuthenticated}}}, az))
	ctx := context.Background()
	b := &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "example.com:s:a", Finalizers: []string{"example.com/f"}},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/s", TrustBundle: string(testpki.NewCA(t, "ca").CertPEM)}}
	if _, err := srv.Client.CertificatesV1().ClusterTrustBundles().Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(srv.Config)
	cfg.BearerToken = "gc"
	cfg.UserAgent = "garbage-collector"
	gc := kubernetes.NewForConfigOrDie(cfg)
	_, err := gc.CertificatesV1().ClusterTrustBundles().Patch(ctx, b.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	if err != nil {
		t.Errorf("gc removes a finalizer: %v, want it allowed as kube allows it", err)
	}
	_ = http.MethodGet
}
