package core_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	rt "github.com/kubegate/kubegate/apiserver/registry/registrytest"
)

// getTable GETs path from srv as kubectl get does, as a Table.
func getTable(t *testing.T, srv *apiservertest.Server, path string) *metav1.Table {
	t.Helper()
	code, body := rt.Do(t, srv, http.MethodGet, path, "", map[string]string{"Accept": rt.TableAccept})
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return &table
}

// tableNow is the test server's clock in TestTableCells: objects it creates
// are 0s old, and the events' fixed times are hours before it.
var tableNow = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

// TestTableCells checks the cells of each of the core group's kinds, as a
// kube-apiserver v1.37.2 gave them for the same objects: numbers where kube
// puts numbers, the wide columns included, and "*" where the value is the
// server's choice (a cluster IP). Rows are in name order. The server runs
// without admission plugins or default service accounts, which would add
// objects and fields of their own.
func TestTableCells(t *testing.T) {
	t.Parallel()
	srv := apiservertest.Start(t, apiservertest.WithAdmission(), apiservertest.WithoutDefaultServiceAccounts(),
		apiservertest.WithClock(func() time.Time { return tableNow }))
	for _, o := range []struct{ path, body string }{
		{"/api/v1/namespaces", `{"metadata":{"name":"t"}}`},
		{"/api/v1/namespaces/t/serviceaccounts", `{"metadata":{"name":"robot"}}`},
		{"/api/v1/namespaces/t/configmaps", `{"metadata":{"name":"empty"}}`},
		{"/api/v1/namespaces/t/configmaps", `{"metadata":{"name":"three"},"data":{"a":"1","b":"2"},"binaryData":{"c":"AAE="}}`},
		{"/api/v1/namespaces/t/secrets", `{"metadata":{"name":"none"}}`},
		{"/api/v1/namespaces/t/secrets", `{"metadata":{"name":"opaque"},"data":{"a":"YQ==","b":"Yg=="}}`},
		{"/api/v1/namespaces/t/secrets", `{"metadata":{"name":"tls"},"type":"kubernetes.io/tls","data":{"tls.crt":"","tls.key":""}}`},
		{"/api/v1/namespaces/t/services", `{"metadata":{"name":"plain"},"spec":{"selector":{"app":"web","tier":"front"},"ports":[{"port":80,"targetPort":8080}]}}`},
		{"/api/v1/namespaces/t/services", `{"metadata":{"name":"np"},"spec":{"type":"NodePort","selector":{"app":"web"},"externalIPs":["1.2.3.4","5.6.7.8"],
			"ports":[{"name":"http","port":80,"nodePort":30080},{"name":"dns","port":53,"protocol":"UDP","nodePort":30053}]}}`},
		{"/api/v1/namespaces/t/services", `{"metadata":{"name":"headless"},"spec":{"clusterIP":"None","ports":[{"port":5432}]}}`},
		{"/api/v1/namespaces/t/services", `{"metadata":{"name":"noports"},"spec":{"clusterIP":"None"}}`},
		{"/api/v1/namespaces/t/services", `{"metadata":{"name":"ext"},"spec":{"type":"ExternalName","externalName":"example.com"}}`},
		{"/api/v1/namespaces/t/services", `{"metadata":{"name":"lb"},"spec":{"type":"LoadBalancer","ports":[{"port":443,"nodePort":30443}]}}`},
		{"/api/v1/namespaces/t/replicationcontrollers", `{"metadata":{"name":"rc"},"spec":{"replicas":3,"selector":{"app":"rc"},
			"template":{"metadata":{"labels":{"app":"rc"}},"spec":{"containers":[{"name":"a","image":"nginx"},{"name":"b","image":"busybox"}]}}}}`},
		{"/api/v1/namespaces/t/events", `{"metadata":{"name":"ev-old"},"involvedObject":{"kind":"Pod","name":"web-1","namespace":"t",
			"fieldPath":"spec.containers{web}"},"reason":"Pulled","message":"  image pulled  ","type":"Normal",
			"source":{"component":"kubelet","host":"node-a"},"firstTimestamp":"2026-02-28T22:00:00Z","lastTimestamp":"2026-02-28T23:00:00Z","count":5}`},
		{"/api/v1/namespaces/t/events", `{"metadata":{"name":"ev-kindonly"},"involvedObject":{"kind":"Node","namespace":"t"},
			"reason":"Boom","message":"hi","type":"Warning","source":{"component":"kubelet"},"firstTimestamp":"2026-02-28T22:00:00Z"}`},
		{"/apis/events.k8s.io/v1/namespaces/t/events", `{"metadata":{"name":"ev-new"},"eventTime":"2026-02-28T21:00:00.000000Z",
			"reportingController":"example.com/ctl","reportingInstance":"ctl-1","action":"Sync","reason":"Synced","type":"Normal",
			"regarding":{"kind":"Deployment","name":"web","namespace":"t","apiVersion":"apps/v1"},"note":"synced it"}`},
		{"/apis/events.k8s.io/v1/namespaces/t/events", `{"metadata":{"name":"ev-series"},"eventTime":"2026-02-28T21:00:00.000000Z",
			"series":{"count":7,"lastObservedTime":"2026-02-28T23:30:00.000000Z"},"reportingController":"example.com/ctl",
			"reportingInstance":"ctl-1","action":"Sync","reason":"Synced","type":"Warning","regarding":{"kind":"Pod","name":"p","namespace":"t"},"note":"again"}`},
		{"/api/v1/nodes", `{"metadata":{"name":"n1","labels":{"node-role.kubernetes.io/control-plane":"","node-role.kubernetes.io/worker":"",
			"kubernetes.io/role":"master"}},"spec":{"unschedulable":true}}`},
		{"/api/v1/nodes", `{"metadata":{"name":"n2"}}`},
		{"/api/v1/namespaces/t/pods", `{"metadata":{"name":"done"},"spec":{"containers":[{"name":"a","image":"busybox"}]}}`},
		{"/api/v1/namespaces/t/pods", `{"metadata":{"name":"side"},"spec":{"initContainers":[{"name":"s","image":"busybox","restartPolicy":"Always"}],
			"containers":[{"name":"a","image":"busybox"}]}}`},
		{"/api/v1/namespaces/t/pods", `{"metadata":{"name":"mixed"},"spec":{"containers":[{"name":"a","image":"busybox"},{"name":"b","image":"busybox"}],
			"readinessGates":[{"conditionType":"example.com/x"},{"conditionType":"example.com/y"}]}}`},
		{"/api/v1/namespaces/t/pods", `{"metadata":{"name":"initwait"},"spec":{"initContainers":[{"name":"i1","image":"busybox"},{"name":"i2","image":"busybox"}],
			"containers":[{"name":"a","image":"busybox"}]}}`},
	} {
		rt.Create(t, srv, [2]string{o.path, o.body})
	}
	for _, p := range []struct{ path, body string }{
		{"/api/v1/nodes/n1/status", `{"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"x","message":"x",
			"lastHeartbeatTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"}],
			"nodeInfo":{"kernelVersion":"6.1","kubeletVersion":"v1.37.2","operatingSystem":"linux","architecture":"amd64"},
			"addresses":[{"type":"InternalIP","address":"10.0.0.1"}]}}`},
		{"/api/v1/namespaces/t/pods/done/status", `{"status":{"phase":"Succeeded","containerStatuses":[{"name":"a","image":"busybox","imageID":"",
			"ready":false,"restartCount":2,"state":{"terminated":{"exitCode":0,"reason":"Completed","startedAt":"2026-02-28T00:00:00Z","finishedAt":"2026-02-28T00:01:00Z"}},
			"lastState":{"terminated":{"exitCode":1,"startedAt":"2026-02-28T00:00:00Z","finishedAt":"2026-02-28T00:00:30Z"}}}]}}`},
		{"/api/v1/namespaces/t/pods/side/status", `{"status":{"phase":"Running","conditions":[{"type":"Initialized","status":"True"}],
			"initContainerStatuses":[{"name":"s","image":"busybox","imageID":"","ready":true,"started":true,"restartCount":3,"state":{"running":{"startedAt":"2026-02-28T00:00:00Z"}}}],
			"containerStatuses":[{"name":"a","image":"busybox","imageID":"","ready":true,"restartCount":0,"state":{"running":{"startedAt":"2026-02-28T00:00:00Z"}}}]}}`},
		{"/api/v1/namespaces/t/pods/mixed/status", `{"status":{"phase":"Running","podIP":"10.244.0.5","podIPs":[{"ip":"10.244.0.5"}],
			"conditions":[{"type":"example.com/x","status":"True"}],"containerStatuses":[
			{"name":"a","image":"busybox","imageID":"","ready":true,"restartCount":0,"state":{"running":{"startedAt":"2026-02-28T00:00:00Z"}}},
			{"name":"b","image":"busybox","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":0,"reason":"Completed",
			"startedAt":"2026-02-28T00:00:00Z","finishedAt":"2026-02-28T00:01:00Z"}}}]}}`},
		{"/api/v1/namespaces/t/pods/initwait/status", `{"status":{"phase":"Pending","initContainerStatuses":[
			{"name":"i1","image":"busybox","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":0,
			"startedAt":"2026-02-28T00:00:00Z","finishedAt":"2026-02-28T00:01:00Z"}}},
			{"name":"i2","image":"busybox","imageID":"","ready":false,"restartCount":1,"state":{"waiting":{"reason":"CrashLoopBackOff"}},
			"lastState":{"terminated":{"exitCode":2,"startedAt":"2026-02-28T00:00:00Z","finishedAt":"2026-02-28T22:00:00Z"}}}]}}`},
	} {
		if code, body := rt.Do(t, srv, http.MethodPatch, p.path, p.body, nil); code >= 300 {
			t.Fatalf("PATCH %s: %d %s", p.path, code, body)
		}
	}

	for _, tc := range []struct {
		name, path string
		want       []string // each row's cells as JSON
	}{
		{"configmaps count data and binary data keys, as numbers", "/api/v1/namespaces/t/configmaps", []string{
			`["empty",0,"0s"]`, `["three",3,"0s"]`}},
		{"a single configmap", "/api/v1/namespaces/t/configmaps/three", []string{`["three",3,"0s"]`}},
		{"secrets", "/api/v1/namespaces/t/secrets", []string{
			`["none","Opaque",0,"0s"]`, `["opaque","Opaque",2,"0s"]`, `["tls","kubernetes.io/tls",2,"0s"]`}},
		{"service accounts", "/api/v1/namespaces/t/serviceaccounts", []string{`["robot","0s"]`}},
		{"services", "/api/v1/namespaces/t/services", []string{
			`["ext","ExternalName","<none>","example.com","<none>","0s","<none>"]`,
			`["headless","ClusterIP","None","<none>","5432/TCP","0s","<none>"]`,
			`["lb","LoadBalancer","*","<pending>","443:30443/TCP","0s","<none>"]`,
			`["noports","ClusterIP","None","<none>","<none>","0s","<none>"]`,
			`["np","NodePort","*","1.2.3.4,5.6.7.8","80:30080/TCP,53:30053/UDP","0s","app=web"]`,
			`["plain","ClusterIP","*","<none>","80/TCP","0s","app=web,tier=front"]`}},
		{"replication controllers", "/api/v1/namespaces/t/replicationcontrollers", []string{
			`["rc",3,0,0,"0s","a,b","nginx,busybox","app=rc"]`}},
		{"core events", "/api/v1/namespaces/t/events", []string{
			`["120m","Warning","Boom","node","","kubelet","hi","120m",1,"ev-kindonly"]`,
			`["60m","Normal","Pulled","pod/web-1","spec.containers{web}","kubelet, node-a","image pulled","120m",5,"ev-old"]`}},
		{"events.k8s.io events", "/apis/events.k8s.io/v1/namespaces/t/events", []string{
			`["3h","Normal","Synced","deployment/web","","example.com/ctl, ctl-1","synced it","3h",1,"ev-new"]`,
			`["30m","Warning","Synced","pod/p","","example.com/ctl, ctl-1","again","3h",7,"ev-series"]`}},
		{"nodes", "/api/v1/nodes", []string{
			`["n1","NotReady,SchedulingDisabled","control-plane,master,worker","0s","v1.37.2","10.0.0.1","<none>","<unknown>","6.1 (amd64)","<unknown>"]`,
			`["n2","Unknown","<none>","0s","","<none>","<none>","<unknown>","<unknown>","<unknown>"]`}},
		{"pods", "/api/v1/namespaces/t/pods", []string{
			`["done","0/1","Completed","2 (23h ago)","0s","<none>","<none>","<none>","<none>"]`,
			`["initwait","0/1","Init:CrashLoopBackOff","1 (120m ago)","0s","<none>","<none>","<none>","<none>"]`,
			`["mixed","1/2","NotReady","0","0s","10.244.0.5","<none>","<none>","1/2"]`,
			`["side","2/2","Running","3","0s","<none>","<none>","<none>","<none>"]`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := getTable(t, srv, tc.path)
			if len(table.Rows) != len(tc.want) {
				t.Fatalf("%d rows, want %d", len(table.Rows), len(tc.want))
			}
			for i, row := range table.Rows {
				var want []any
				if err := json.Unmarshal([]byte(tc.want[i]), &want); err != nil {
					t.Fatal(err)
				}
				if len(row.Cells) != len(want) {
					t.Errorf("row %d = %v, want %s", i, row.Cells, tc.want[i])
					continue
				}
				for c := range want {
					if want[c] != "*" && row.Cells[c] != want[c] {
						t.Errorf("row %d = %v, want %s", i, row.Cells, tc.want[i])
						break
					}
				}
			}
		})
	}

	// kubectl leaves finished pods out of some listings by their row
	// condition.
	table := getTable(t, srv, "/api/v1/namespaces/t/pods/done")
	want := []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue,
		Reason: "Succeeded", Message: "The pod has completed successfully."}}
	if got := table.Rows[0].Conditions; len(got) != 1 || got[0] != want[0] {
		t.Errorf("conditions of a succeeded pod = %+v, want %+v", got, want)
	}
}
