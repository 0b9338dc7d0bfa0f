package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubegate/kubegate/store/etcd/etcdtest"
)

// TestTwoAPIServersShareEtcd runs two `kubegate apiserver` processes on
// one etcd, reached over mTLS with the etcd certificates `pki init`
// writes: each sees the other's writes, through get and through watch.
func TestTwoAPIServersShareEtcd(t *testing.T) {
	dir := t.TempDir()
	if res := kubegate(t, "pki", "init", "--dir", dir); res.code != 0 {
		t.Fatalf("pki init: %+v", res)
	}
	pki := func(name string) string { return filepath.Join(dir, "pki", name) }
	etcd, err := etcdtest.Start(t.TempDir(), &transport.TLSInfo{
		CertFile: pki("etcd/server.crt"), KeyFile: pki("etcd/server.key"), TrustedCAFile: pki("etcd/ca.crt"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	etcdFlags := []string{"--etcd-servers", etcd.TLSURL, "--etcd-cafile", pki("etcd/ca.crt"),
		"--etcd-certfile", pki("apiserver-etcd-client.crt"), "--etcd-keyfile", pki("apiserver-etcd-client.key")}
	a := startAPIServer(t, dir, "", 0, etcdFlags...)
	b := startAPIServer(t, dir, "", 0, etcdFlags...)
	csA, csB := clientset(t, dir, a.url), clientset(t, dir, b.url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	w, err := csB.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch on B: %v", err)
	}
	defer w.Stop()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "from-a"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.cn-hangzhou.aliyuncs.com/kube-easy/app:latest"}}}}
	created, err := csA.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create on A: %v", err)
	}
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("B's watch ended before it saw A's pod")
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if ev.Type != watch.Added || !isPod || p.Name != "from-a" {
				continue
			}
			if p.ResourceVersion != created.ResourceVersion || p.UID != created.UID {
				t.Errorf("B saw rv %s uid %s, A wrote rv %s uid %s", p.ResourceVersion, p.UID, created.ResourceVersion, created.UID)
			}
		case <-ctx.Done():
			t.Fatal("B's watch did not deliver the pod created on A")
		}
		break
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "from-b"}, Data: map[string]string{"k": "v"}}
	if _, err := csB.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create on B: %v", err)
	}
	got, err := csA.CoreV1().ConfigMaps("default").Get(ctx, "from-b", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("A reading B's configmap: %v %v", got, err)
	}
}
