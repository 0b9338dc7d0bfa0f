package ca

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/kubegate/kubegate/internal/testgolden"
	"github.com/kubegate/kubegate/internal/testpki"
)

// oddName is a file name with every byte a label value must escape or
// replace: a double quote, a backslash, a line feed and a byte that is not
// UTF-8.
const oddName = "odd \"quoted\" back\\slash\nnewline \xff"

// promTree is TestExpiryTable's tree at checkNow plus what a kubegate tree
// adds to kubeadm's: a kubelet-NODE.conf, a user's cert under pki/users, a
// user kubeconfig with two users (one expired), and a self-signed leaf with
// an odd file name that no CA of the tree signed.
func promTree(t *testing.T) []ExpiryEntry {
	t.Helper()
	dir := t.TempDir()
	emb := kubeadmTree(t, dir, func(n string, o *testpki.Options) {
		if n == "front-proxy-client" {
			o.NotAfter = checkNow.Add(20 * 24 * time.Hour)
		}
		if n == "scheduler.conf" {
			o.NotAfter = checkNow.Add(-time.Hour)
		}
	})
	pki := filepath.Join(dir, PKIDir)
	caCert, err := ParseCertPEM("ca.crt", mustRead(t, filepath.Join(pki, "ca.crt")))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := ParseKeyPEM("ca.key", mustRead(t, filepath.Join(pki, "ca.key")))
	if err != nil {
		t.Fatal(err)
	}
	cluster := &testpki.Cert{Cert: caCert, Key: caKey}
	issue := func(cn string, notAfter time.Time) *testpki.Cert {
		return cluster.Issue(t, testpki.Options{CN: cn, NotBefore: treeStart, NotAfter: notAfter})
	}
	if err := os.MkdirAll(filepath.Join(pki, "users"), 0o700); err != nil {
		t.Fatal(err)
	}
	issue("alice", checkNow.AddDate(0, 3, 0)).WriteFiles(t, filepath.Join(pki, "users"), "alice")
	testpki.SelfSigned(t, testpki.Options{CN: "odd", NotBefore: treeStart, NotAfter: checkNow.Add(90 * time.Second)}).
		WriteFiles(t, pki, oddName)
	for _, k := range []struct {
		file, user string
		notAfter   time.Time
	}{
		{"kubelet-w1.conf", "system:node:w1", treeStart.AddDate(1, 0, 0)},
		{"bob.conf", "bob", checkNow.AddDate(0, 0, 45)},
		{"bob.conf", "bob-2025", checkNow.AddDate(0, 0, -30)},
	} {
		c := issue(k.user, k.notAfter)
		emb = append(emb, Embedded{File: k.file, User: k.user, CertPEM: c.CertPEM, KeyPEM: c.KeyPEM})
	}
	found, err := Scan(dir, emb)
	if err != nil {
		t.Fatal(err)
	}
	return Expiry(found, checkNow)
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestExpiryPrometheusGolden_H7(t *testing.T) {
	entries := promTree(t)
	// The writer sorts by itself, whatever order it is given.
	slices.Reverse(entries)
	var b bytes.Buffer
	if err := WriteExpiryPrometheus(&b, entries); err != nil {
		t.Fatal(err)
	}
	testgolden.Check(t, filepath.Join("testdata", "expiry.prom.golden"), b.Bytes())
}

// TestExpiryPrometheusParses_H7 reads the report back with the Prometheus text
// parser (the one node-exporter's textfile collector uses) and checks every
// family, label and value against the entries it was written from.
func TestExpiryPrometheusParses_H7(t *testing.T) {
	entries := promTree(t)
	var b bytes.Buffer
	if err := WriteExpiryPrometheus(&b, entries); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(&b)
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	type key struct{ path, user string }
	byKey := map[key]ExpiryEntry{}
	for _, e := range entries {
		byKey[key{strings.ToValidUTF8(e.Path, "\uFFFD"), e.KubeconfigUser}] = e
	}
	want := map[string]func(ExpiryEntry) float64{
		MetricExpirySeconds: func(e ExpiryEntry) float64 { return float64(e.ResidualSeconds) },
		MetricNotAfter:      func(e ExpiryEntry) float64 { return float64(e.NotAfter.Unix()) },
	}
	if len(families) != len(want) {
		t.Errorf("got %d metric families, want %d", len(families), len(want))
	}
	// What each family says of a few entries, by path and user.
	seen := map[string]map[key][]string{}
	for name, value := range want {
		mf := families[name]
		if mf == nil {
			t.Errorf("no metric family %s", name)
			continue
		}
		if mf.GetType() != dto.MetricType_GAUGE || mf.GetHelp() == "" {
			t.Errorf("%s: type %s, help %q; want a gauge with help", name, mf.GetType(), mf.GetHelp())
		}
		if len(mf.GetMetric()) != len(entries) {
			t.Errorf("%s: %d series, want one per certificate (%d)", name, len(mf.GetMetric()), len(entries))
		}
		seen[name] = map[key][]string{}
		for _, m := range mf.GetMetric() {
			var names, values []string
			for _, l := range m.GetLabel() {
				names = append(names, l.GetName())
				values = append(values, l.GetValue())
			}
			if !slices.Equal(names, PrometheusLabels) {
				t.Errorf("%s: labels %q, want %q", name, names, PrometheusLabels)
				continue
			}
			k := key{values[0], values[1]}
			if _, dup := seen[name][k]; dup {
				t.Errorf("%s: two series for %q", name, k)
			}
			seen[name][k] = values
			e, ok := byKey[k]
			if !ok {
				t.Errorf("%s: series for %q, which is no certificate of the tree", name, k)
				continue
			}
			if got, want := m.GetGauge().GetValue(), value(e); got != want {
				t.Errorf("%s%q = %v, want %v", name, values, got, want)
			}
			if m.TimestampMs != nil {
				t.Errorf("%s%q has a timestamp, which the textfile collector refuses", name, values)
			}
		}
	}
	for _, c := range []struct {
		path, user, role, ca string
		left                 time.Duration
	}{
		{"pki/front-proxy-client.crt", "", "front-proxy-client", "pki/front-proxy-ca.crt", 20 * 24 * time.Hour},
		{"scheduler.conf", "system:kube-scheduler", "scheduler.conf", "pki/ca.crt", -time.Hour},
		{"pki/etcd/ca.crt", "", "etcd-ca", "pki/etcd/ca.crt", treeStart.AddDate(10, 0, 0).Sub(checkNow)},
		{"pki/etcd/peer.crt", "", "etcd-peer", "pki/etcd/ca.crt", treeStart.AddDate(1, 0, 0).Sub(checkNow)},
		{"kubelet-w1.conf", "system:node:w1", "kubelet.conf", "pki/ca.crt", treeStart.AddDate(1, 0, 0).Sub(checkNow)},
		{"bob.conf", "bob-2025", RoleUser, "pki/ca.crt", -30 * 24 * time.Hour},
		{"pki/users/alice.crt", "", RoleUser, "pki/ca.crt", checkNow.AddDate(0, 3, 0).Sub(checkNow)},
		{"pki/odd \"quoted\" back\\slash\nnewline \uFFFD.crt", "", RoleOther, "unknown", 90 * time.Second},
	} {
		k := key{c.path, c.user}
		if got, want := seen[MetricExpirySeconds][k], []string{c.path, c.user, c.role, c.ca}; !slices.Equal(got, want) {
			t.Errorf("labels of %q = %q, want %q", k, got, want)
		}
		if e := byKey[k]; e.ResidualSeconds != int64(c.left/time.Second) {
			t.Errorf("%q has %ds left, want %v", k, e.ResidualSeconds, c.left)
		}
	}
}

// FuzzExpiryPrometheusLabels_H7 writes an entry with any path and user and
// expects the parser to read back the same label values (bad UTF-8 made
// U+FFFD) in a single series.
func FuzzExpiryPrometheusLabels_H7(f *testing.F) {
	f.Add("pki/apiserver.crt", "", "ca")
	f.Add(oddName, "a\"b\\c\nd", "\xff\xfe")
	f.Add("}", "{", "=\"")
	f.Fuzz(func(t *testing.T, path, user, role string) {
		e := ExpiryEntry{Path: path, KubeconfigUser: user, Role: role, Issuer: "-",
			NotAfter: checkNow, ResidualSeconds: -1}
		var b bytes.Buffer
		if err := WriteExpiryPrometheus(&b, []ExpiryEntry{e}); err != nil {
			t.Fatal(err)
		}
		parser := expfmt.NewTextParser(model.LegacyValidation)
		families, err := parser.TextToMetricFamilies(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("parse %q: %v", b.String(), err)
		}
		ms := families[MetricExpirySeconds].GetMetric()
		if len(ms) != 1 {
			t.Fatalf("%d series, want 1:\n%s", len(ms), b.String())
		}
		var got []string
		for _, l := range ms[0].GetLabel() {
			got = append(got, l.GetValue())
		}
		valid := func(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }
		if want := []string{valid(path), valid(user), valid(role), valid(path)}; !slices.Equal(got, want) {
			t.Errorf("label values %q, want %q", got, want)
		}
	})
}
