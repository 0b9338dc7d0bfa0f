package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testwait"
)

const netPodsYAML = `apiVersion: v1
kind: Pod
metadata:
  name: net-1
  labels: {app: net, member: one}
spec:
  containers:
  - name: web
    image: registry.example/web:1
    ports: [{name: http, containerPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata:
  name: net-2
  labels: {app: net, member: two}
spec:
  containers:
  - name: web
    image: registry.example/web:1
    ports: [{name: http, containerPort: 8080}]
`

// sliceEndpoints reads `kubectl get endpointslices -l
// kubernetes.io/service-name=SVC -o json` as its ready addresses:port,
// sorted.
func sliceEndpoints(t *testing.T, c *upCluster, svc string) (string, string) {
	t.Helper()
	res := c.kubectl(t, nil, "get", "endpointslices", "-l", "kubernetes.io/service-name="+svc, "-o", "json")
	if res.code != 0 {
		return "", res.stderr
	}
	var list struct {
		Items []struct {
			Endpoints []struct {
				Addresses  []string `json:"addresses"`
				Conditions struct {
					Ready *bool `json:"ready"`
				} `json:"conditions"`
			} `json:"endpoints"`
			Ports []struct {
				Port *int32 `json:"port"`
			} `json:"ports"`
		} `json:"items"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &list); err != nil {
		return "", err.Error()
	}
	var out []string
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready == nil || !*ep.Conditions.Ready {
				continue
			}
			for _, p := range s.Ports {
				for _, a := range ep.Addresses {
					out = append(out, fmt.Sprintf("%s:%d", a, *p.Port))
				}
			}
		}
	}
	sort.Strings(out)
	return strings.Join(out, ","), res.stdout
}

// TestServicesGetTheReadyPodsAsEndpoints: against kubegate up with three
// simulated nodes, a Service made by kubectl create service, and one by
// kubectl expose pod, get EndpointSlices and Endpoints listing the
// selected pods' IPs once they are ready, on the port their named target
// port resolves to (docs/kubernetes-behaviour.md G.10).
func TestServicesGetTheReadyPodsAsEndpoints(t *testing.T) {
	t.Parallel()
	requireTool(t, "kubectl")
	c := startUp(t, filepath.Join(t.TempDir(), "cluster"), 0, "--nodes", "3")
	defer c.stop(t)

	must(t, c.kubectl(t, []byte(netPodsYAML), "create", "-f", "-"), "pod/net-2 created")
	must(t, c.kubectl(t, nil, "wait", "--for=condition=Ready", "pod", "-l", "app=net", "--timeout=60s"), "condition met")
	res := c.kubectl(t, nil, "get", "pods", "-l", "app=net", "-o", "jsonpath={.items[0].status.podIP} {.items[1].status.podIP}")
	ips := strings.Fields(res.stdout)
	if res.code != 0 || len(ips) != 2 {
		t.Fatalf("pod IPs: %+v", res)
	}
	sort.Strings(ips)
	want := ips[0] + ":8080," + ips[1] + ":8080"

	must(t, c.kubectl(t, nil, "create", "service", "clusterip", "net", "--tcp=80:http"), "service/net created")
	// kubectl create service selects app=<name>.
	testwait.For(t, 60*time.Second, "the EndpointSlices of net", func() (bool, string) {
		got, seen := sliceEndpoints(t, c, "net")
		return got == want, got + "\n" + seen
	})
	testwait.For(t, 60*time.Second, "the Endpoints of net", func() (bool, string) {
		res := c.kubectl(t, nil, "get", "endpoints", "net")
		return res.code == 0 && strings.Contains(res.stdout, ips[0]+":8080") && strings.Contains(res.stdout, ips[1]+":8080"),
			res.stdout + res.stderr
	})
	res = c.kubectl(t, nil, "get", "endpoints", "net")
	if !strings.Contains(res.stderr, "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice") {
		t.Errorf("kubectl get endpoints: stderr %q; want kube's deprecation warning", res.stderr)
	}
	if !strings.HasPrefix(res.stdout, "NAME") || !strings.Contains(res.stdout, "ENDPOINTS") || !strings.Contains(res.stdout, "AGE") {
		t.Errorf("kubectl get endpoints: %q; want NAME, ENDPOINTS and AGE", res.stdout)
	}

	// expose pod selects the pod's labels: net-1 alone.
	must(t, c.kubectl(t, nil, "expose", "pod", "net-1", "--name=net-one", "--port=80", "--target-port=8080"), "service/net-one exposed")
	res = c.kubectl(t, nil, "get", "pod", "net-1", "-o", "jsonpath={.status.podIP}")
	testwait.For(t, 60*time.Second, "the EndpointSlices of net-one", func() (bool, string) {
		got, seen := sliceEndpoints(t, c, "net-one")
		return got == res.stdout+":8080", got + "\n" + seen
	})

	// A deleted pod leaves the slices.
	must(t, c.kubectl(t, nil, "delete", "pod", "net-2", "--wait=false"), "deleted")
	testwait.For(t, 60*time.Second, "net-2 gone from the EndpointSlices of net", func() (bool, string) {
		got, seen := sliceEndpoints(t, c, "net")
		return got == res.stdout+":8080", got + "\n" + seen
	})
}
