package inspect

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func addSeeds(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.*"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	for _, s := range []string{
		"", " ", "\x00\xff", "-----BEGIN CERTIFICATE-----\n", "-----BEGIN X-----\nAA==\n-----END X-----\n",
		"a.b", "eyJ9.e30.", "eyJhbGciOiJub25lIn0.e30.", "eyJhbGciOiJub25lIn0.eyJleHAiOjFlMzA5fQ.",
		"apiVersion: v1\nkind: Config\n", "{\"kind\":\"Config\",\"users\":[{\"name\":\"u\",\"user\":{}}]}",
		"users:\n- name: u\n  user:\n    token: a.b.c\n", "clusters: [{name: c, cluster: {certificate-authority-data: Zm9v}}]\nusers: [{name: u}]",
	} {
		f.Add([]byte(s))
	}
}

// FuzzSniff checks that the sniffer never panics and that what it accepts
// Inspect either describes or rejects with a one-line error.
func FuzzSniff(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		kind, err := Sniff(data)
		if err != nil {
			if kind != kindUnknown {
				t.Fatalf("Sniff returned kind %q with error %v", kind, err)
			}
			return
		}
		if _, err := Inspect(data, Options{}); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("error spans several lines: %q", err)
		}
	})
}

// FuzzInspect checks that Inspect and both writers never panic, and that
// errors are one line.
func FuzzInspect(f *testing.F) {
	addSeeds(f)
	roots, err := ParseCAs(mustRead(f, "ca.crt"))
	if err != nil {
		f.Fatal(err)
	}
	keys, err := ParseVerifyKeys(mustRead(f, "sa.pub"))
	if err != nil {
		f.Fatal(err)
	}
	opts := Options{Now: func() time.Time { return fixtureNow }, Roots: roots, Keys: keys}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Inspect(data, opts)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error spans several lines: %q", err)
			}
			return
		}
		var out bytes.Buffer
		if err := r.WriteText(&out); err != nil {
			t.Fatal(err)
		}
		if err := r.WriteJSON(&out); err != nil {
			t.Fatal(err)
		}
	})
}

func mustRead(f *testing.F, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		f.Fatal(err)
	}
	return b
}
