package rootcacert_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/controllertest"
	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/controllers/rootcacert"
	"github.com/kubegate/kubegate/internal/testwait"
)

const bundle = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

// Through the API server: a namespace, old or new, gets kube-root-ca.crt
// with the bundle and kube's description; a changed bundle is put back
// (another annotation kept), and a deleted ConfigMap is made again.
func TestEveryNamespaceGetsTheRootCA_G16(t *testing.T) {
	s := controllertest.StartWith(t, manager.Options{RootCA: []byte(bundle), Logger: slog.New(slog.DiscardHandler),
		Descriptors: []controllers.Descriptor{rootcacert.Descriptor}})
	ctx := context.Background()
	if _, err := s.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	published := func(ns string) *corev1.ConfigMap {
		t.Helper()
		var cm *corev1.ConfigMap
		testwait.For(t, 20*time.Second, "kube-root-ca.crt in "+ns, func() (bool, string) {
			var err error
			cm, err = s.Client.CoreV1().ConfigMaps(ns).Get(ctx, rootcacert.ConfigMapName, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return cm.Data["ca.crt"] == bundle && cm.Annotations[rootcacert.DescriptionAnnotation] == rootcacert.Description,
				"data " + cm.Data["ca.crt"]
		})
		return cm
	}
	for _, ns := range []string{"default", "kube-system", "team"} {
		published(ns)
	}
	cm := published("team")
	cm.Data["ca.crt"] = "tampered"
	cm.Annotations["mine"] = "kept"
	if _, err := s.Client.CoreV1().ConfigMaps("team").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if cm := published("team"); cm.Annotations["mine"] != "kept" {
		t.Errorf("annotations %v: another annotation was dropped", cm.Annotations)
	}
	if err := s.Client.CoreV1().ConfigMaps("team").Delete(ctx, rootcacert.ConfigMapName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	published("team")
}
