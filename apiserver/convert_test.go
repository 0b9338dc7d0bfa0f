package apiserver

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// The metadata client asks for PartialObjectMetadata[List] in protobuf
// first, then JSON; its informer lists and watches that way (D.7).
func TestMetadataClientAndInformer(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cms := ts.clientset(t, false).CoreV1().ConfigMaps("default")
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before", Labels: map[string]string{"v": "1"}},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{FieldManager: "test"}); err != nil {
		t.Fatal(err)
	}
	mc, err := metadata.NewForConfig(ts.restConfig(false))
	if err != nil {
		t.Fatal(err)
	}
	res := mc.Resource(corev1.SchemeGroupVersion.WithResource("configmaps"))

	got, err := res.Namespace("default").Get(ctx, "before", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got.Name != "before" || got.Labels["v"] != "1" || len(got.ManagedFields) != 1 {
		t.Errorf("get = %+v, want the PartialObjectMetadata of before with its labels and managed fields", got)
	}
	list, err := res.Namespace("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "before" || list.ResourceVersion == "" {
		t.Errorf("list = %+v, want before and a resourceVersion", list)
	}

	events := make(chan string, 100)
	factory := metadatainformer.NewSharedInformerFactory(mc, 0)
	inf := factory.ForResource(corev1.SchemeGroupVersion.WithResource("configmaps")).Informer()
	name := func(obj any) string {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		return obj.(*metav1.PartialObjectMetadata).Name
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { events <- "add " + name(obj) },
		UpdateFunc: func(_, obj any) {
			events <- "update " + name(obj) + " " + obj.(*metav1.PartialObjectMetadata).Labels["v"]
		},
		DeleteFunc: func(obj any) { events <- "delete " + name(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("metadata informer did not sync")
	}
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Labels: map[string]string{"v": "1"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Labels["v"] = "2"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := res.Namespace("default").Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("metadata delete: %v", err)
	}
	for i, want := range []string{"add before", "add app", "update app 2", "delete app"} {
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("event %d = %q, want %q", i, got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d: timed out waiting for %q", i, want)
		}
	}
}

// The answers to metadata, Table and unservable Accept headers, as
// kube-apiserver v1.37.2 gives them (D.7).
func TestAcceptAnswers(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Data: map[string]string{"k": "v"}}
	cm, err := ts.clientset(t, false).CoreV1().ConfigMaps("default").Create(context.Background(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const (
		list = "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Dapp"
		one  = "/api/v1/namespaces/default/configmaps/app"
	)
	meta := func(gv string) string {
		data, _ := json.Marshal(&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: gv}, ObjectMeta: cm.ObjectMeta})
		return string(data)
	}
	status406 := func(msg, details string) string {
		return "{\n  \"kind\": \"Status\",\n  \"apiVersion\": \"v1\",\n  \"metadata\": {},\n  \"status\": \"Failure\",\n  \"message\": \"" + msg +
			"\",\n  \"reason\": \"NotAcceptable\",\n" + details + "  \"code\": 406\n}"
	}
	onlyTypes := "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
	for _, tc := range []struct {
		name, path, accept string
		code               int
		contentType, body  string
	}{
		{"metadata of one object", one, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", 200, "application/json", meta("meta.k8s.io/v1") + "\n"},
		{"metadata list", list, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", 200, "application/json",
			`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"` + cm.ResourceVersion + `"},"items":[` + meta("meta.k8s.io/v1") + "]}\n"},
		{"v1beta1 metadata list", list, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1", 200, "application/json",
			`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1beta1","metadata":{"resourceVersion":"` + cm.ResourceVersion + `"},"items":[` + meta("meta.k8s.io/v1beta1") + "]}\n"},
		{"object metadata of a list", list, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", 406, "application/json",
			status406("you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)", "")},
		{"list metadata of an object", one, "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", 406, "application/json",
			status406("you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)", "")},
		{"protobuf Table", one, "application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1", 406, "application/json", status406(onlyTypes, "")},
		{"unknown kind", list, "application/json;as=Foo;g=meta.k8s.io;v=v1", 406, "application/json", status406(onlyTypes, "")},
		{"no group and version", list, "application/json;as=PartialObjectMetadataList", 406, "application/json", status406(onlyTypes, "")},
		{"text on a list", list, "text/plain", 406, "application/json",
			status406(`406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch`, "  \"details\": {},\n")},
		{"application/* on an object", one, "application/*", 406, "application/json",
			`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf","reason":"NotAcceptable","details":{},"code":406}` + "\n"},
		{"YAML watch", list + "&watch=1", "application/yaml", 406, "application/yaml",
			"apiVersion: v1\ncode: 406\nkind: Status\nmessage: 'only the following media types are accepted: application/json;stream=watch,\n  application/vnd.kubernetes.protobuf;stream=watch'\nmetadata: {}\nreason: NotAcceptable\nstatus: Failure\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, hdr, body := get(t, ts.http.URL+tc.path, tc.accept)
			got := string(body)
			if code != tc.code || hdr.Get("Content-Type") != tc.contentType || got != tc.body {
				t.Errorf("got %d %s\n%s\nwant %d %s\n%s", code, hdr.Get("Content-Type"), got, tc.code, tc.contentType, tc.body)
			}
		})
	}
}
