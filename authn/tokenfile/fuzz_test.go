package tokenfile

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/kubegate/kubegate/authn"
)

// errForm is every error Parse may return for a file of unknown origin:
// a line number and a fixed description, never file content.
var errForm = regexp.MustCompile(`^token file: (line \d+: must have at least 3 columns \(token, user name, user uid\), found \d+|(record on line \d+; )?parse error on line \d+, column \d+: (bare " in non-quoted-field|extraneous or missing " in quoted-field))$`)

// FuzzParse checks that any file either fails with a line-numbered error
// that echoes nothing, or loads so that every token in it authenticates as
// the last record naming it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"tok,alice,1001\n",
		"tok,alice,1001,\"g1,g2\"\n",
		"tok,alice,1001,g1,g2\n",
		"#c,a,b\n",
		"a,b\n",
		",alice,1\n",
		"dup,a,1\ndup,b,2\n",
		"\"a\nb\",alice,1\n",
		"\"a\"\"b\",alice,1\n",
		"a\"b,alice,1\n",
		"\"a\"b,alice,1\n",
		"\"unterminated,alice,1\n",
		"t\x00k,al\x00ice,1\r\n",
		"\ufefftok,alice,1\n",
		"\n\n\r\n",
		"tok,alice,1,\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a, _, err := Parse(bytes.NewReader(data))
		if err != nil {
			if !errForm.MatchString(err.Error()) {
				t.Fatalf("error %q is not of an allowed form", err)
			}
			return
		}
		// Reference: the records as encoding/csv reads them, last wins.
		want := map[string][]string{}
		r := csv.NewReader(bytes.NewReader(data))
		r.FieldsPerRecord = -1
		for {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("Parse accepted what encoding/csv rejects: %v", err)
			}
			if len(rec) < 3 {
				t.Fatalf("Parse accepted a record with %d columns", len(rec))
			}
			if rec[0] != "" {
				want[rec[0]] = rec
			}
		}
		if a.Len() != len(want) {
			t.Fatalf("Len() = %d, want %d", a.Len(), len(want))
		}
		for tok, rec := range want {
			resp, ok, err := a.AuthenticateToken(context.Background(), tok)
			if !ok || err != nil {
				t.Fatalf("token of a record not found: ok=%v err=%v", ok, err)
			}
			if resp.User.Name != rec[1] || resp.User.UID != rec[2] {
				t.Fatalf("user = %q/%q, want %q/%q", resp.User.Name, resp.User.UID, rec[1], rec[2])
			}
			var groups []string
			if len(rec) > 3 {
				groups = strings.Split(rec[3], ",")
			}
			groups = authn.AddAuthenticated(rec[1], groups)
			if !reflect.DeepEqual(resp.User.Groups, groups) {
				t.Fatalf("groups = %q, want %q", resp.User.Groups, groups)
			}
		}
	})
}
