// Package testgolden compares what a test produced with a golden file
// committed under the package's testdata, and rewrites that file instead
// when the test binary runs with -update:
//
//	go test ./ca -run TestCheck -update
//
// Importing it defines the -update flag; a test package importing it
// defines no flag of that name itself.
package testgolden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata with what the tests produce")

// Check compares got with the file at path (relative to the package's
// directory, as the test runs there: "testdata/x.golden"), reporting a
// difference as an error of t. With -update it first writes got to path,
// creating its directory.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	check(t, path, got, *update)
}

func check(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run the test with -update if the change is intended)\ngot:\n%s\nwant:\n%s", path, got, want)
	}
}
