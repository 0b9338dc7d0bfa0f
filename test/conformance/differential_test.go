package conformance

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubegate/kubegate/controllers/manager"
	"github.com/kubegate/kubegate/internal/testtool"
	"github.com/kubegate/kubegate/internal/testwait"
	"sigs.k8s.io/yaml"
)

// op is one operation of the list: an HTTP request or a kubectl command,
// sent to both servers in turn.
type op struct {
	name string

	// An HTTP request. body is YAML or JSON; it is sent as JSON unless
	// contentType says otherwise.
	method, path, contentType, accept, body string
	// headOnly compares the status and media type but not the body, for
	// answers too large to compare usefully yet (OpenAPI documents).
	headOnly bool

	// project, when set, replaces a JSON answer by what it returns before
	// the answers are compared, unnormalized: a part of a large document.
	project func(any) any

	// A kubectl command, with its standard input.
	kubectl []string
	stdin   string

	// until, when set, repeats the op on each server until its answer
	// satisfies it or about 2 minutes have passed, for a state a server's
	// controllers reach in their own time; the last answer is compared.
	until func(answer) bool
}

// untilTimeout bounds how long an op with until waits for its answer.
const untilTimeout = 2 * time.Minute

// answer is what a server gave for an op, normalized.
type answer struct {
	status    int      // HTTP status, or kubectl's exit code
	mediaType string   // Content-Type without parameters
	warnings  []string // the Warning headers, normalized, in order (HTTP)
	body      any      // the normalized body (HTTP)
	stdout    string   // kubectl
	stderr    string   // kubectl
	// unprojected is the body before the op's projection, which an op's
	// until may read (the whole object whose condition it waits for);
	// never compared.
	unprojected any
}

// satisfies reports whether a meets o's until, on the body as projected
// or as it was.
func (o op) satisfies(a answer) bool {
	if o.until(a) {
		return true
	}
	if a.unprojected == nil {
		return false
	}
	a.body = a.unprojected
	return o.until(a)
}

func (o op) run(t *testing.T, s *server, n normalizer) answer {
	t.Helper()
	if o.until == nil {
		return o.runOnce(t, s, n)
	}
	deadline := time.Now().Add(untilTimeout)
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, 200*time.Millisecond) {
		a := o.runOnce(t, s, n)
		if o.satisfies(a) || time.Now().After(deadline) {
			return a
		}
		time.Sleep(pause)
	}
}

func (o op) runOnce(t *testing.T, s *server, n normalizer) answer {
	t.Helper()
	if o.kubectl != nil {
		code, stdout, stderr := s.kubectl(t, o.stdin, o.kubectl...)
		a := answer{status: code, stderr: n.kubectlOutput(stderr)}
		if json.Valid([]byte(stdout)) {
			a.body = n.body([]byte(stdout)) // kubectl get --raw, -o json
		} else {
			a.stdout = n.kubectlOutput(stdout)
		}
		return a
	}
	var body []byte
	contentType := o.contentType
	if o.body != "" {
		body = []byte(o.body)
		if contentType == "" {
			contentType = "application/json"
			j, err := yaml.YAMLToJSON(body)
			if err != nil {
				t.Fatalf("op %s: body: %v", o.name, err)
			}
			body = j
		}
	}
	accept := o.accept
	if accept == "" {
		accept = "application/json"
	}
	// {rv} is the resourceVersion of the last list this server answered.
	path := strings.ReplaceAll(o.path, "{rv}", s.listRV)
	code, header, b := s.do(t, o.method, path, contentType, accept, body)
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	a := answer{status: code, mediaType: mt}
	for _, w := range header.Values("Warning") {
		a.warnings = append(a.warnings, n.text(w))
	}
	if o.headOnly {
		return a
	}
	switch {
	case o.project != nil:
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			a.body = n.text(string(b))
		} else {
			a.unprojected = n.value("", v)
			a.body = o.project(v)
		}
	case mt == "application/vnd.kubernetes.protobuf":
		a.body = n.value("", decodeProtobuf(t, b))
	default:
		a.body = n.stream(b)
	}
	if m, ok := a.body.(map[string]any); ok && strings.HasSuffix(fmt.Sprint(m["kind"]), "List") {
		var list struct {
			Metadata struct{ ResourceVersion string } `json:"metadata"`
		}
		if json.Unmarshal(b, &list) == nil && list.Metadata.ResourceVersion != "" {
			s.listRV = list.Metadata.ResourceVersion
		}
	}
	return a
}

// decodeProtobuf decodes a protobuf answer with client-go's scheme and
// returns it as decoded JSON, so that it is normalized and compared like
// any other answer.
func decodeProtobuf(t *testing.T, b []byte) any {
	t.Helper()
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(b, nil, nil)
	if err != nil {
		return fmt.Sprintf("undecodable protobuf: %v", err)
	}
	j, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// compare returns why two answers differ, or "" when they are the same.
func compare(kube, kg answer) string {
	var why []string
	if kube.status != kg.status {
		why = append(why, fmt.Sprintf("status: kube %d, kubegate %d", kube.status, kg.status))
	}
	if kube.mediaType != kg.mediaType {
		why = append(why, fmt.Sprintf("media type: kube %q, kubegate %q", kube.mediaType, kg.mediaType))
	}
	if !slices.Equal(kube.warnings, kg.warnings) {
		why = append(why, fmt.Sprintf("warnings: kube %q, kubegate %q", kube.warnings, kg.warnings))
	}
	why = append(why, differences(kube.body, kg.body, 3)...)
	if kube.stdout != kg.stdout {
		why = append(why, fmt.Sprintf("stdout: kube %q, kubegate %q", clip(kube.stdout), clip(kg.stdout)))
	}
	if kube.stderr != kg.stderr {
		why = append(why, fmt.Sprintf("stderr: kube %q, kubegate %q", clip(kube.stderr), clip(kg.stderr)))
	}
	return strings.Join(why, "; ")
}

func clip(s string) string {
	if len(s) > 300 {
		return s[:297] + "..."
	}
	return s
}

// TestKubegateAnswersLikeKubeAPIServer runs every operation of ops.go
// against kube-apiserver and `kubegate up` and prints one line per
// operation. It fails on a difference that allowlist_test.go does not
// give a reason for, and on a listed difference that has gone, so that the
// list only ever shrinks.
func TestKubegateAnswersLikeKubeAPIServer(t *testing.T) {
	testtool.Require(t, "kubectl")
	bin := requireOracle(t)
	requireGatewayAPI(t)

	kube := startKubeAPIServer(t, bin)
	// No controllers, as kube-apiserver runs without kube-controller-
	// manager: a deleted namespace stays Terminating on both (G.9).
	kg := startKubegate(t, "--controllers", "-"+strings.Join(manager.Names(), ",-"))
	n := normalizer{generated: map[string]string{}}
	for _, s := range []*server{kube, kg} {
		u, err := url.Parse(s.url)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(u.Port())
		n.servers, n.ports = append(n.servers, u.Host), append(n.ports, port)
	}
	for _, s := range []*server{kube, kg} {
		prepare(t, s)
	}

	// KUBEGATE_OPS, a regular expression, runs only the operations whose
	// names match it, for work on one area; the whole list runs without it.
	only := regexp.MustCompile(os.Getenv("KUBEGATE_OPS"))
	filtered := os.Getenv("KUBEGATE_OPS") != ""
	var unexpected, fixed []string
	same, ops := 0, 0
	for _, o := range operations() {
		if !only.MatchString(o.name) {
			continue
		}
		ops++
		a, b := o.run(t, kube, n), o.run(t, kg, n)
		why := compare(a, b)
		listed, isListed := knownDifferences[o.name]
		switch {
		case why == "" && !isListed:
			same++
			t.Logf("same     %s", o.name)
		case why == "":
			same++
			fixed = append(fixed, o.name)
			t.Logf("same     %s (listed as a difference: %s)", o.name, listed)
		case isListed:
			t.Logf("differs  %s: %s [listed: %s]", o.name, why, listed)
		default:
			unexpected = append(unexpected, o.name)
			t.Logf("differs  %s: %s", o.name, why)
		}
	}
	t.Logf("%d operations: %d the same, %d different (%d listed)", ops, same, ops-same, ops-same-len(unexpected))
	if filtered && ops == 0 {
		t.Errorf("KUBEGATE_OPS=%q matches no operation", os.Getenv("KUBEGATE_OPS"))
	}
	for name := range knownDifferences {
		if !hasOp(name) {
			t.Errorf("allowlist_test.go lists %q, which is no operation", name)
		}
	}
	sort.Strings(unexpected)
	if len(unexpected) > 0 {
		t.Errorf("%d operations answer differently from kube-apiserver: %s", len(unexpected), strings.Join(unexpected, ", "))
	}
	if len(fixed) > 0 {
		t.Errorf("these operations now answer like kube-apiserver; take them out of allowlist_test.go: %s", strings.Join(fixed, ", "))
	}
}

func hasOp(name string) bool {
	for _, o := range operations() {
		if o.name == name {
			return true
		}
	}
	return false
}

// prepare brings both servers to the same starting point: the namespaces
// the operations use, each with its default service account, which
// kube-controller-manager (not running here) would create and kubegate's
// own controller does.
func prepare(t *testing.T, s *server) {
	t.Helper()
	for _, name := range preparedNamespaces {
		ns := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + name + `"}}`
		if code, _, body := s.do(t, "POST", "/api/v1/namespaces", "application/json", "", []byte(ns)); code != http.StatusCreated {
			t.Fatalf("%s: create namespace %s: %d %s", s.name, name, code, body)
		}
		sa := `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default"}}`
		code, _, body := s.do(t, "POST", "/api/v1/namespaces/"+name+"/serviceaccounts", "application/json", "", []byte(sa))
		if code != http.StatusCreated && code != http.StatusConflict {
			t.Fatalf("%s: create service account %s/default: %d %s", s.name, name, code, body)
		}
		testwait.For(t, 30*time.Second, s.name+" "+name+"/default service account", func() (bool, string) {
			code, _, body := s.do(t, "GET", "/api/v1/namespaces/"+name+"/serviceaccounts/default", "", "", nil)
			return code == http.StatusOK, string(body)
		})
	}
}

// q builds a query string.
func q(kv ...string) string {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return "?" + v.Encode()
}
