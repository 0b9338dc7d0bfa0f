package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

// The answers of two servers legitimately differ in what each generates:
// uids, resourceVersions, timestamps, random name suffixes, allocated IPs
// and ports, tokens, and the servers' own addresses. normalize replaces
// each of those with a placeholder that says only whether it was there,
// so that every other difference counts.

// placeholders for values that are generated per server.
const (
	phUID        = "<uid>"
	phRV         = "<resourceVersion>"
	phTime       = "<time>"
	phContinue   = "<continue>"
	phToken      = "<token>"
	phIP         = "<allocated-ip>"
	phPort       = "<allocated-port>"
	phServer     = "<server>"
	phServerPort = "<server-port>"
	phSuffix     = "<suffix>"
	phCert       = "<fingerprint>"
)

// generatedKeys maps a JSON key to the placeholder of its non-empty values.
var generatedKeys = map[string]string{
	"uid":                     phUID,
	"resourceVersion":         phRV,
	"creationTimestamp":       phTime,
	"deletionTimestamp":       phTime,
	"time":                    phTime, // managedFields
	"lastPhaseTransitionTime": phTime, // a persistent volume's
	"lastTransitionTime":      phTime,
	"lastUpdateTime":          phTime, // CSR and Deployment conditions
	"lastProbeTime":           phTime,
	"lastHeartbeatTime":       phTime,
	"startTime":               phTime,
	"eventTime":               phTime,
	"firstTimestamp":          phTime,
	"lastTimestamp":           phTime,
	"expirationTimestamp":     phTime,
	"renewTime":               phTime,
	"acquireTime":             phTime,
	"continue":                phContinue,
	"token":                   phToken,
	"nodePort":                phPort,
}

var (
	uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	// a JSON Web Token, as TokenRequest and kubectl create token print it.
	jwtRE = regexp.MustCompile(`eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+`)
	// a client certificate's fingerprint, as the credential-id extra
	// carries it; each server has its own certificates.
	certIDRE = regexp.MustCompile(`X509SHA256=[0-9a-f]{64}`)
	// the service-account admission's token volume, named with 5 random
	// characters.
	apiAccessRE = regexp.MustCompile(`kube-api-access-[a-z0-9]{5}`)
	// an address in the service CIDR both servers are given.
	serviceCIDR = mustCIDR("10.96.0.0/12")
)

func mustCIDR(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return n
}

// normalizer replaces what one server generated.
type normalizer struct {
	servers []string // host:port of the servers, replaced in every string
	ports   []int    // their ports, which the kubernetes Service targets
	// generated maps each name made from a generateName to its prefix, as
	// seen; later answers (a Table's cells, a message) show the name too.
	generated map[string]string
}

// stream normalizes a body that may hold several JSON documents, a watch
// stream's events: one document is returned as body does, several as a
// list of them.
func (n normalizer) stream(b []byte) any {
	dec := json.NewDecoder(bytes.NewReader(b))
	var docs []any
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if err != io.EOF || len(docs) < 2 {
				return n.body(b)
			}
			return n.value("", docs)
		}
		docs = append(docs, v)
	}
}

// body normalizes a response body: JSON is decoded and walked, anything
// else is treated as text.
func (n normalizer) body(b []byte) any {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return n.text(string(b))
	}
	return n.value("", v)
}

func (n normalizer) value(key string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = n.value(k, e)
			if s, ok := e.(string); ok && s != "" && key == "disruptedPods" {
				out[k] = phTime // a PodDisruptionBudget's eviction times, by pod
			}
		}
		// a name made from generateName keeps the prefix only.
		if meta, ok := out["metadata"].(map[string]any); ok {
			if prefix, _ := meta["generateName"].(string); prefix != "" {
				if name, _ := meta["name"].(string); strings.HasPrefix(name, prefix) {
					if n.generated != nil {
						n.generated[name] = prefix
					}
					meta["name"] = prefix + phSuffix
				}
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = n.value(key, e)
			if key == "cells" {
				out[i] = tableCell(out[i])
			}
		}
		return out
	case string:
		if ph, ok := generatedKeys[key]; ok && v != "" {
			return ph
		}
		if ip := net.ParseIP(v); ip != nil && serviceCIDR.Contains(ip) && (key == "clusterIP" || key == "clusterIPs") {
			return phIP
		}
		return n.text(v)
	case float64:
		if ph, ok := generatedKeys[key]; ok && v != 0 {
			return ph
		}
		for _, p := range n.ports {
			if v == float64(p) {
				return phServerPort
			}
		}
		return v
	default:
		return v
	}
}

// cellAgeRE matches a Table's Age cell ("0s", "12s", "2m3s", "5d").
var cellAgeRE = regexp.MustCompile(`^(\d+[smhdy])+$`)

// tableCell normalizes a Table cell that shows a time: an age, or a
// timestamp (a role's Created At).
func tableCell(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	if cellAgeRE.MatchString(s) {
		return "<age>"
	}
	if _, err := time.Parse(time.RFC3339, s); err == nil {
		return phTime
	}
	return v
}

// text replaces generated values inside free text: messages, kubectl
// output.
func (n normalizer) text(s string) string {
	for _, srv := range n.servers {
		s = strings.ReplaceAll(s, srv, phServer)
	}
	if prefix, ok := n.generated[s]; ok {
		s = prefix + phSuffix
	}
	s = uuidRE.ReplaceAllString(s, phUID)
	s = jwtRE.ReplaceAllString(s, phToken)
	s = certIDRE.ReplaceAllString(s, "X509SHA256="+phCert)
	s = apiAccessRE.ReplaceAllString(s, "kube-api-access-"+phSuffix)
	return s
}

// ageRE matches the AGE column of kubectl's tables ("0s", "12s", "2m3s").
var ageRE = regexp.MustCompile(`(?m)\b(\d+[smhd])+\b`)

// padRE matches the blanks between two columns of kubectl's tables.
var padRE = regexp.MustCompile(`  +`)

// diffDirRE matches the temporary directories kubectl diff compares, and
// diffTimeRE the modification times diff prints beside their files.
var (
	diffDirRE  = regexp.MustCompile(`/(LIVE|MERGED)-\d+/`)
	diffTimeRE = regexp.MustCompile(`\t\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? [+-]\d{4}`)
)

// stampRE matches the RFC 3339 times kubectl prints in a column
// (a CRD's or a role's CREATED AT).
var stampRE = regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\b`)

// kubectlOutput normalizes what kubectl printed: ages and times, the
// padding between columns, which follows from the widths of the cells (an
// age of "9s" on one server and "10s" on the other moves every column
// after it), and the temporary files of kubectl diff.
func (n normalizer) kubectlOutput(s string) string {
	s = diffTimeRE.ReplaceAllString(diffDirRE.ReplaceAllString(s, "/$1/"), "\t<time>")
	s = stampRE.ReplaceAllString(s, phTime)
	return padRE.ReplaceAllString(ageRE.ReplaceAllString(n.text(s), "<age>"), "   ")
}

// differences lists where a (kube-apiserver's answer) and b (kubegate's)
// differ, as JSON paths with both values, at most max of them.
func differences(a, b any, max int) []string {
	var out []string
	var walk func(path string, a, b any)
	walk = func(path string, a, b any) {
		if len(out) >= max || reflect.DeepEqual(a, b) {
			return
		}
		am, aok := a.(map[string]any)
		bm, bok := b.(map[string]any)
		if aok && bok {
			keys := map[string]bool{}
			for k := range am {
				keys[k] = true
			}
			for k := range bm {
				keys[k] = true
			}
			sorted := make([]string, 0, len(keys))
			for k := range keys {
				sorted = append(sorted, k)
			}
			sort.Strings(sorted)
			for _, k := range sorted {
				av, ain := am[k]
				bv, bin := bm[k]
				switch {
				case !ain:
					out = append(out, fmt.Sprintf("%s.%s: kube has none, kubegate %s", path, k, short(bv)))
				case !bin:
					out = append(out, fmt.Sprintf("%s.%s: kube %s, kubegate has none", path, k, short(av)))
				default:
					walk(path+"."+k, av, bv)
				}
				if len(out) >= max {
					return
				}
			}
			return
		}
		al, aok := a.([]any)
		bl, bok := b.([]any)
		if aok && bok && len(al) == len(bl) {
			for i := range al {
				walk(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i])
			}
			return
		}
		out = append(out, fmt.Sprintf("%s: kube %s, kubegate %s", path, short(a), short(b)))
	}
	walk("", a, b)
	return out
}

// short renders a value in at most 160 characters.
func short(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if len(b) > 160 {
		return string(b[:157]) + "..."
	}
	return string(b)
}

// The normalizer hides what each server generates, and nothing else.
func TestNormalizerHidesOnlyGeneratedValues(t *testing.T) {
	n := normalizer{servers: []string{"127.0.0.1:1111", "127.0.0.1:2222"}}
	kube := `{"metadata":{"name":"gen-abcde","generateName":"gen-","uid":"0f8fad5b-d9cb-469f-a165-70867728950e","resourceVersion":"12",
"creationTimestamp":"2026-11-25T10:00:00Z"},"spec":{"clusterIP":"10.96.0.10","ports":[{"port":80,"nodePort":30001}]},
"message":"see https://127.0.0.1:1111/api","token":"abc"}`
	kg := `{"metadata":{"name":"gen-xyz12","generateName":"gen-","uid":"7c9e6679-7425-40de-944b-e07fc1f90ae7","resourceVersion":"3",
"creationTimestamp":"2026-11-25T10:00:01Z"},"spec":{"clusterIP":"10.96.200.1","ports":[{"port":80,"nodePort":31999}]},
"message":"see https://127.0.0.1:2222/api","token":"def"}`
	if d := differences(n.body([]byte(kube)), n.body([]byte(kg)), 5); len(d) != 0 {
		t.Errorf("generated values differ after normalizing: %q", d)
	}
	for _, tc := range []struct{ name, kg, want string }{
		{"a port", strings.Replace(kg, `"port":80`, `"port":81`, 1), ".spec.ports[0].port: kube 80, kubegate 81"},
		{"an IP outside the service CIDR", strings.Replace(kg, "10.96.200.1", "192.168.0.1", 1), `.spec.clusterIP: kube "<allocated-ip>", kubegate "192.168.0.1"`},
		{"a missing field", strings.Replace(kg, `"token":"def"`, `"token":"def","other":1`, 1), `.other: kube has none, kubegate 1`},
		{"a name not from generateName", strings.Replace(kg, `"gen-xyz12"`, `"other"`, 1), `.metadata.name: kube "gen-<suffix>", kubegate "other"`},
		{"an empty uid", strings.Replace(kg, `"7c9e6679-7425-40de-944b-e07fc1f90ae7"`, `""`, 1), `.metadata.uid: kube "<uid>", kubegate ""`},
	} {
		d := differences(n.body([]byte(kube)), n.body([]byte(tc.kg)), 5)
		if len(d) != 1 || d[0] != tc.want {
			t.Errorf("%s: got differences %q, want [%q]", tc.name, d, tc.want)
		}
	}
}

// A Table's age and timestamp cells are normalized; other cells are not.
func TestNormalizerTableCells(t *testing.T) {
	n := normalizer{}
	a := n.body([]byte(`{"rows":[{"cells":["web",1,"0s","2026-11-25T10:00:00Z"]}]}`))
	b := n.body([]byte(`{"rows":[{"cells":["web",1,"2m3s","2026-11-25T10:00:07Z"]}]}`))
	if d := differences(a, b, 5); len(d) != 0 {
		t.Errorf("ages and times differ after normalizing: %q", d)
	}
	c := n.body([]byte(`{"rows":[{"cells":["api",2,"0s","2026-11-25T10:00:00Z"]}]}`))
	if d := differences(a, c, 5); len(d) != 2 {
		t.Errorf("got differences %q, want the name and the count", d)
	}
}

// A name made from generateName is normalized wherever it shows later, a
// Table's cell for one.
func TestNormalizerRemembersGeneratedNames(t *testing.T) {
	n := normalizer{generated: map[string]string{}}
	n.body([]byte(`{"metadata":{"name":"gen-abcde","generateName":"gen-"}}`))
	n.body([]byte(`{"metadata":{"name":"gen-xyz12","generateName":"gen-"}}`))
	a := n.body([]byte(`{"rows":[{"cells":["gen-abcde",1]}]}`))
	b := n.body([]byte(`{"rows":[{"cells":["gen-xyz12",1]}]}`))
	if d := differences(a, b, 5); len(d) != 0 {
		t.Errorf("generated names differ after normalizing: %q", d)
	}
	if c := n.body([]byte(`{"rows":[{"cells":["gen-other",1]}]}`)); len(differences(a, c, 5)) != 1 {
		t.Errorf("a name never generated was normalized away")
	}
}

func TestKubectlOutputNormalizesAges(t *testing.T) {
	n := normalizer{}
	a := n.kubectlOutput("NAME   READY   AGE\nweb    0/1     3s\n")
	b := n.kubectlOutput("NAME   READY   AGE\nweb    0/1     2m5s\n")
	if a != b {
		t.Errorf("ages differ after normalizing: %q, %q", a, b)
	}
	if c := n.kubectlOutput("NAME   READY   AGE\nweb    1/1     3s\n"); c == a {
		t.Errorf("a real difference (READY) was normalized away: %q", c)
	}
}

func TestKubectlOutputNormalizesThePaddingAfterAnAge(t *testing.T) {
	n := normalizer{}
	a := n.kubectlOutput("NAME   AGE   IMAGES\nweb    9s    app:1\n")
	b := n.kubectlOutput("NAME   AGE   IMAGES\nweb    10s   app:1\n")
	if a != b {
		t.Errorf("the columns after an age differ after normalizing: %q, %q", a, b)
	}
	if c := n.kubectlOutput("NAME   AGE   IMAGES\nweb    9s    app:2\n"); c == a {
		t.Errorf("a real difference (IMAGES) was normalized away: %q", c)
	}
}

// A created-at column is the time each server stored the object, which
// differs by a second when the clock ticks between the two requests.
func TestKubectlOutputNormalizesTimes(t *testing.T) {
	n := normalizer{}
	a := n.kubectlOutput("NAME   SCOPE   CREATED AT\ngears   Cluster   2026-12-07T00:02:07Z\n")
	b := n.kubectlOutput("NAME   SCOPE   CREATED AT\ngears   Cluster   2026-12-07T00:02:08Z\n")
	if a != b {
		t.Errorf("times differ after normalizing: %q, %q", a, b)
	}
	if c := n.kubectlOutput("NAME   SCOPE   CREATED AT\ngears   Namespaced   2026-12-07T00:02:07Z\n"); c == a {
		t.Errorf("a real difference (SCOPE) was normalized away: %q", c)
	}
}

// An op that waits for a condition and compares a projection of the
// object sees the whole object: its wait ends when the condition holds.
func TestUntilSeesTheObjectBeforeItsProjection(t *testing.T) {
	o := op{until: established, project: establishedOnly}
	obj := map[string]any{"status": map[string]any{"conditions": []any{map[string]any{"type": "Established", "status": "True"}}}}
	if !o.satisfies(answer{body: establishedOnly(obj), unprojected: obj}) {
		t.Error("an established definition, projected to its condition, does not satisfy until")
	}
	obj["status"].(map[string]any)["conditions"].([]any)[0].(map[string]any)["status"] = "False"
	if o.satisfies(answer{body: establishedOnly(obj), unprojected: obj}) {
		t.Error("a definition not yet established satisfies until")
	}
}
