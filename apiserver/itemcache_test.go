package apiserver

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestItemCacheGenerations(t *testing.T) {
	t.Parallel()
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	k := func(i int) itemKey { return itemKey{gvr: gvr, key: fmt.Sprint("/k", i), rev: 1} }
	val := func(i int) []byte { return []byte(fmt.Sprintf("%050d", i)) } // 50 bytes
	cost := itemCost(k(0), val(0))
	c := newItemCache(8 * cost) // four entries a generation
	for i := range 4 {
		c.put(k(i), val(i))
	}
	if got := c.get(k(0)); string(got) != string(val(0)) {
		t.Fatalf("get(0) = %q, want %q", got, val(0))
	}
	if got := c.get(itemKey{gvr: gvr, key: "/k0", rev: 2}); got != nil {
		t.Errorf("another revision hit: %q", got)
	}
	if got := c.get(itemKey{gvr: corev1.SchemeGroupVersion.WithResource("secrets"), key: "/k0", rev: 1}); got != nil {
		t.Errorf("another resource hit: %q", got)
	}
	// The fifth entry passes half the budget: the first four become the
	// previous generation, still found, and k(0) moves forward when read.
	c.put(k(4), val(4))
	if c.get(k(1)) == nil || c.get(k(4)) == nil {
		t.Fatal("an entry of either generation is missing")
	}
	// Filling the current generation again drops what was previous and
	// not read since.
	for i := 5; i < 10; i++ {
		c.put(k(i), val(i))
	}
	if got := c.get(k(2)); got != nil {
		t.Errorf("k2, unread for two generations, is still cached: %q", got)
	}
	total := 0
	for _, m := range []map[itemKey][]byte{c.cur, c.prev} {
		for k, b := range m {
			total += itemCost(k, b)
		}
	}
	if total > c.budget {
		t.Errorf("the cache holds %d bytes, over its budget of %d", total, c.budget)
	}
	if c.put(k(99), make([]byte, 52)); c.get(k(99)) != nil {
		t.Errorf("an entry over an eighth of the budget was cached")
	}
}

// A JSON LIST after an update or a delete shows it, though the objects'
// earlier encodings are cached (docs/architecture.md, "Data flow").
func TestJSONListAfterChangesShowsThem(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx := context.Background()
	cms := ts.clientset(t, false).CoreV1().ConfigMaps("default")
	for i := range 3 {
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("c", i)},
			Data: map[string]string{"v": "1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if list, err := cms.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 3 {
		t.Fatalf("first list: %v, %d items", err, len(list.Items))
	}
	if _, err := cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c1"}, Data: map[string]string{"v": "2"}}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctx, "c2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 || list.Items[1].Data["v"] != "2" {
		t.Fatalf("after an update and a delete: %v, %+v", err, list)
	}
	one, err := cms.Get(ctx, "c1", metav1.GetOptions{})
	if err != nil || list.Items[1].ResourceVersion != one.ResourceVersion {
		t.Errorf("c1 listed at resourceVersion %s, read at %s (%v)", list.Items[1].ResourceVersion, one.ResourceVersion, err)
	}
}
