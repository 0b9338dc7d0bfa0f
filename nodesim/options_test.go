package nodesim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func TestNewRejectsOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no nodes", Options{}, "count 0: want 1 to 32768"},
		{"too many nodes", Options{Count: MaxCount + 1}, "count 32769"},
		{"too many pods", Options{Count: 1, Pods: resource.MustParse("254")}, "pods 254: want 1 to 253"},
		{"negative cpu", Options{Count: 1, CPU: resource.MustParse("-1")}, "cpu -1: must not be negative"},
		{"bad prefix", Options{Count: 1, Prefix: "Node_"}, `name prefix "Node_"`},
		{"bad label", Options{Count: 1, Labels: map[string]string{"a b": "c"}}, `label key "a b"`},
		{"bad taint", Options{Count: 1, Taints: []corev1.Taint{{Key: "k", Effect: "Never"}}}, `taint k effect "Never"`},
		{"negative delay", Options{Count: 1, RunningDelay: -time.Second}, "running delay -1s"},
		{"negative run time", Options{Count: 1, PodRunTime: -time.Second}, "pod run time -1s: must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(fake.NewClientset(), tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := New(nil, Options{Count: 1}); err == nil {
		t.Error("New with no client: no error")
	}
}

func TestAddresses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		i            int
		node, podNet string
	}{
		{0, "10.0.0.1", "10.244.0.0/24"},
		{1, "10.0.0.2", "10.244.1.0/24"},
		{255, "10.0.1.0", "10.244.255.0/24"},
		{256, "10.0.1.1", "10.245.0.0/24"},
		{3071, "10.0.12.0", "10.255.255.0/24"},
		{3072, "10.0.12.1", "10.128.0.0/24"},
		{MaxCount - 1, "10.0.128.0", "10.243.255.0/24"},
	} {
		t.Run(fmt.Sprint(tc.i), func(t *testing.T) {
			if got := nodeIP(tc.i).String(); got != tc.node {
				t.Errorf("nodeIP = %s, want %s", got, tc.node)
			}
			if got := podCIDR(tc.i).String(); got != tc.podNet {
				t.Errorf("podCIDR = %s, want %s", got, tc.podNet)
			}
		})
	}
}

func TestPodAddressesReused(t *testing.T) {
	t.Parallel()
	s, err := New(fake.NewClientset(), Options{Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := s.nodes["node-1"]
	pod := func(uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p" + uid, UID: types.UID(uid)}, Spec: corev1.PodSpec{NodeName: "node-1"}}
	}
	var uids []types.UID
	for i := range MaxPods {
		p := pod(fmt.Sprint(i))
		ip, err := s.pods.address(n, p)
		if err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		if want := fmt.Sprintf("10.244.0.%d", i+2); ip.String() != want {
			t.Fatalf("pod %d got %s, want %s", i, ip, want)
		}
		if again, _ := s.pods.address(n, p); again != ip {
			t.Fatalf("pod %d asked again got %s, want %s", i, again, ip)
		}
		uids = append(uids, p.UID)
	}
	full := pod("one-too-many")
	if _, err := s.pods.address(n, full); err == nil || !strings.Contains(err.Error(), "pod CIDR 10.244.0.0/24 is full") {
		t.Fatalf("address on a full node: %v", err)
	}
	s.pods.forget(uids[7]) // 10.244.0.9
	if ip, err := s.pods.address(n, full); err != nil || ip.String() != "10.244.0.9" {
		t.Errorf("after a pod went: %s, %v; want its address 10.244.0.9", ip, err)
	}
}

func TestParseLabels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want, err string
	}{
		{"", "map[]", ""},
		{"zone=a,tier=", "map[tier: zone:a]", ""},
		{"example.com/role=db", "map[example.com/role:db]", ""},
		{"zone", "", `label "zone": want key=value`},
		{"zone=a,zone=b", "", `label "zone": key given twice`},
		{"-x=a", "", `label key "-x"`},
		{"x=a b", "", `label x value "a b"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseLabels(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != tc.want {
				t.Errorf("got %v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestParseTaints(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want, err string
	}{
		{"", "[]", ""},
		{"dedicated=gpu:NoSchedule,spot:PreferNoSchedule", "[dedicated=gpu:NoSchedule spot:PreferNoSchedule]", ""},
		{"k=v:NoExecute,k:NoSchedule", "[k=v:NoExecute k:NoSchedule]", ""},
		{"dedicated=gpu", "", `taint "dedicated=gpu": want key[=value]:Effect`},
		{"k:Never", "", `taint k effect "Never"`},
		{"k:NoSchedule,k=v:NoSchedule", "", "key and effect given twice"},
		{"=v:NoSchedule", "", `taint key ""`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseTaints(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err = %v, want %q", err, tc.err)
				}
				return
			}
			var s []string
			for _, t := range got {
				s = append(s, t.ToString())
			}
			if err != nil || "["+strings.Join(s, " ")+"]" != tc.want {
				t.Errorf("got %v, %v; want %s", s, err, tc.want)
			}
		})
	}
}

// FuzzParseTaints: any input gives taints that validate, or an error;
// never a panic. ParseLabels gets the same input.
func FuzzParseTaints(f *testing.F) {
	for _, s := range []string{"", "a=b:NoSchedule", "a:NoExecute,b=c:PreferNoSchedule", ":", "=:,", "a=b=c:NoSchedule"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if m, err := ParseLabels(s); err == nil {
			if err := validateLabels(m); err != nil {
				t.Errorf("ParseLabels(%q) gave an invalid label: %v", s, err)
			}
		}
		taints, err := ParseTaints(s)
		if err != nil {
			return
		}
		for _, tt := range taints {
			if err := validateTaint(tt); err != nil {
				t.Errorf("ParseTaints(%q) gave an invalid taint: %v", s, err)
			}
		}
	})
}

func TestImageID(t *testing.T) {
	t.Parallel()
	for in, repo := range map[string]string{
		"nginx":                        "nginx",
		"nginx:1.27":                   "nginx",
		"registry.example:5000/a/b":    "registry.example:5000/a/b",
		"registry.example:5000/a/b:v1": "registry.example:5000/a/b",
		"a/b@sha256:00":                "a/b",
	} {
		if got := imageID(in); !strings.HasPrefix(got, repo+"@sha256:") || len(got) != len(repo)+len("@sha256:")+64 {
			t.Errorf("imageID(%q) = %q, want %s@sha256:<64 hex>", in, got, repo)
		}
	}
}
