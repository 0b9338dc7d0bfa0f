package tokenfile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/kubegate/kubegate/authn"
)

// lookup is a token that should authenticate, and the user it should give.
type lookup struct {
	token string
	want  *authn.User // nil: not found
}

func TestParse(t *testing.T) {
	t.Parallel()
	u := func(name, uid string, groups ...string) *authn.User {
		// The shared response carries system:authenticated where the
		// chain adds it.
		return &authn.User{Name: name, UID: uid, Groups: authn.AddAuthenticated(name, groups)}
	}
	tests := []struct {
		name      string
		file      string
		lookups   []lookup
		wantLen   int
		wantWarns []string // substrings, one per warning, in order
	}{
		{
			name:    "A.2 three columns: token, user, uid, no groups",
			file:    "tok1,alice,1001\n",
			lookups: []lookup{{"tok1", u("alice", "1001")}},
			wantLen: 1,
		},
		{
			name:    "A.2 quoted fourth column is split on commas into groups",
			file:    "tok1,alice,1001,\"g1,g2,system:masters\"\n",
			lookups: []lookup{{"tok1", u("alice", "1001", "g1", "g2", "system:masters")}},
			wantLen: 1,
		},
		{
			name:    "A.2 unquoted groups become extra columns and only the first is kept",
			file:    "tok1,alice,1001,g1,g2\n",
			lookups: []lookup{{"tok1", u("alice", "1001", "g1")}},
			wantLen: 1,
		},
		{
			name:    "A.2 columns after the fourth are ignored",
			file:    "tok1,alice,1001,\"g1\",ignored,\"also,ignored\"\n",
			lookups: []lookup{{"tok1", u("alice", "1001", "g1")}},
			wantLen: 1,
		},
		{
			name:    "A.2 empty fourth column gives one empty group",
			file:    "tok1,alice,1001,\n",
			lookups: []lookup{{"tok1", u("alice", "1001", "")}},
			wantLen: 1,
		},
		{
			name:    "A.2 comments are not supported: a # line with 3 columns is a token",
			file:    "#tok,alice,1001\n",
			lookups: []lookup{{"#tok", u("alice", "1001")}, {"tok", nil}},
			wantLen: 1,
		},
		{
			name:    "A.2 blank lines are skipped",
			file:    "\n\ntok1,alice,1001\n\n\ntok2,bob,1002\n\n",
			lookups: []lookup{{"tok1", u("alice", "1001")}, {"tok2", u("bob", "1002")}},
			wantLen: 2,
		},
		{
			name:    "A.2 whitespace is not trimmed",
			file:    " tok1 ,alice, 1001\n",
			lookups: []lookup{{" tok1 ", u("alice", " 1001")}, {"tok1", nil}},
			wantLen: 1,
		},
		{
			name:    "A.2 a UTF-8 BOM is not stripped",
			file:    "\ufefftok1,alice,1001\n",
			lookups: []lookup{{"\ufefftok1", u("alice", "1001")}, {"tok1", nil}},
			wantLen: 1,
		},
		{
			name:      "A.2 empty token: record skipped with a warning",
			file:      "tok1,alice,1001\n,bob,1002\n",
			lookups:   []lookup{{"tok1", u("alice", "1001")}, {"", nil}},
			wantLen:   1,
			wantWarns: []string{"line 2: empty token"},
		},
		{
			name:      "A.2 duplicate token: last wins, with a warning",
			file:      "dup,alice,1001\nother,carol,1003\ndup,bob,1002,\"g\"\n",
			lookups:   []lookup{{"dup", u("bob", "1002", "g")}, {"other", u("carol", "1003")}},
			wantLen:   2,
			wantWarns: []string{"line 3: duplicate token (also on line 1), the last one wins"},
		},
		{
			name:    "A.2 quoting: a quoted token may hold commas and doubled quotes",
			file:    "\"a,b\"\"c\",alice,1001\n",
			lookups: []lookup{{"a,b\"c", u("alice", "1001")}},
			wantLen: 1,
		},
		{
			name:    "A.2 quoting: a newline inside a quoted token is part of it and counts as a line",
			file:    "\"tok\nen\",alice,1001\nbad",
			lookups: nil, // an error on line 3 is expected; see TestParseErrors
			wantLen: -1,
		},
		{
			name:    "A.2 CRLF line endings",
			file:    "tok1,alice,1001\r\ntok2,bob,1002,\"g1,g2\"\r\n",
			lookups: []lookup{{"tok1", u("alice", "1001")}, {"tok2", u("bob", "1002", "g1", "g2")}},
			wantLen: 2,
		},
		{
			name:    "A.2 NUL bytes are ordinary characters",
			file:    "t\x00k,al\x00ice,1001\n",
			lookups: []lookup{{"t\x00k", u("al\x00ice", "1001")}, {"t", nil}},
			wantLen: 1,
		},
		{
			name:    "A.2 no trailing newline",
			file:    "tok1,alice,1001",
			lookups: []lookup{{"tok1", u("alice", "1001")}},
			wantLen: 1,
		},
		{
			name:    "A.2 empty file holds no tokens",
			file:    "",
			lookups: []lookup{{"tok1", nil}},
			wantLen: 0,
		},
		{
			name:    "A.2 huge token line",
			file:    strings.Repeat("x", 1<<20) + ",alice,1001\n",
			lookups: []lookup{{strings.Repeat("x", 1<<20), u("alice", "1001")}, {strings.Repeat("x", 1<<20-1), nil}},
			wantLen: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, warns, err := Parse(strings.NewReader(tt.file))
			if tt.wantLen < 0 {
				if err == nil {
					t.Fatal("Parse: got nil error, want one")
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := a.Len(); got != tt.wantLen {
				t.Errorf("Len() = %d, want %d", got, tt.wantLen)
			}
			if len(warns) != len(tt.wantWarns) {
				t.Fatalf("warnings = %q, want %d matching %q", warns, len(tt.wantWarns), tt.wantWarns)
			}
			for i, w := range tt.wantWarns {
				if !strings.Contains(warns[i], w) {
					t.Errorf("warning %d = %q, want it to contain %q", i, warns[i], w)
				}
			}
			if got := a.Warnings(); !reflect.DeepEqual(got, warns) {
				t.Errorf("Warnings() = %q, want %q", got, warns)
			}
			for _, l := range tt.lookups {
				resp, ok, err := a.AuthenticateToken(context.Background(), l.token)
				if err != nil {
					t.Fatalf("AuthenticateToken: unexpected error %v", err)
				}
				if l.want == nil {
					if ok || resp != nil {
						t.Errorf("AuthenticateToken(%.20q) = %+v, %v, want not found", l.token, resp, ok)
					}
					continue
				}
				if !ok {
					t.Fatalf("AuthenticateToken(%.20q): not found, want %+v", l.token, *l.want)
				}
				if !reflect.DeepEqual(resp.User, *l.want) {
					t.Errorf("AuthenticateToken(%.20q).User = %#v, want %#v", l.token, resp.User, *l.want)
				}
				if resp.Authenticator != Name {
					t.Errorf("Authenticator = %q, want %q", resp.Authenticator, Name)
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-token"
	tests := []struct {
		name     string
		file     string
		wantLine string
	}{
		{"A.2 fewer than 3 columns is an error naming the line", "tok1,alice,1001\n" + secret + ",bob\n", "line 2: must have at least 3 columns (token, user name, user uid), found 2"},
		{"A.2 one column", secret + "\n", "line 1: must have at least 3 columns (token, user name, user uid), found 1"},
		{"A.2 a # comment with fewer than 3 columns is an error", "# tokens for " + secret + "\n", "line 1: must have at least 3 columns"},
		{"A.2 blank lines still count towards line numbers", "\n\n" + secret + ",x\n", "line 3:"},
		{"A.2 a bare quote in an unquoted field is an error", secret + "\"x,alice,1001\n", "line 1, column"},
		{"A.2 text after a closing quote is an error", "\"" + secret + "\"x,alice,1001\n", "line 1, column"},
		{"A.2 an unterminated quote is an error", "tok1,alice,1001\n\"" + secret + ",bob,1002\n", "line 2"},
		{"A.2 quoted newline then a bad record names the record's line", "\"tok\nen\",alice,1001\n" + secret + "\n", "line 3:"},
		{"A.2 a quote trick cannot smuggle a second record", "\"" + secret + "\",\"alice\"\"\n,admin,0\n", "line 1"},
		{"A.2 huge malformed line", secret + strings.Repeat("y", 1<<20) + "\n", "line 1: must have at least 3 columns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := Parse(strings.NewReader(tt.file))
			if err == nil {
				t.Fatal("Parse: got nil error, want one")
			}
			if !strings.Contains(err.Error(), tt.wantLine) {
				t.Errorf("error = %q, want it to contain %q", err, tt.wantLine)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "yyyy") {
				t.Errorf("error %q contains the token", err)
			}
		})
	}
}

func TestTooFewColumnsIsTyped(t *testing.T) {
	t.Parallel()
	_, _, err := Parse(strings.NewReader("a,b\n"))
	if !errors.Is(err, ErrTooFewColumns) {
		t.Errorf("error = %v, want it to wrap ErrTooFewColumns", err)
	}
}

func TestZeroValueAuthenticatesNothing(t *testing.T) {
	t.Parallel()
	var a Authenticator
	resp, ok, err := a.AuthenticateToken(context.Background(), "anything")
	if resp != nil || ok || err != nil {
		t.Errorf("got %v, %v, %v; want nil, false, nil", resp, ok, err)
	}
	if a.Len() != 0 || a.Warnings() != nil {
		t.Errorf("Len() = %d, Warnings() = %q; want 0, nil", a.Len(), a.Warnings())
	}
}

func TestAppendingGroupsToACopyLeavesTheTableAlone(t *testing.T) {
	t.Parallel()
	a, _, err := Parse(strings.NewReader("tok,alice,1,\"g1,g2\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := a.AuthenticateToken(context.Background(), "tok")
	// What a group adder does: copy the response, append a group.
	cp := *first
	cp.User.Groups = append(cp.User.Groups, authn.AllAuthenticated)
	second, _, _ := a.AuthenticateToken(context.Background(), "tok")
	want := authn.User{Name: "alice", UID: "1", Groups: []string{"g1", "g2", authn.AllAuthenticated}}
	if !reflect.DeepEqual(second.User, want) {
		t.Errorf("second lookup = %#v, want %#v", second.User, want)
	}
}

func TestAuthenticatedGroupFollowsTheUser(t *testing.T) {
	t.Parallel()
	a, _, err := Parse(strings.NewReader(strings.Join([]string{
		`t1,alice,1,"dev,ops"`,
		`t2,system:anonymous,2`,
		`t3,system:anonymous,3,"ops,system:authenticated"`,
		`t4,bob,4,"ops,system:unauthenticated"`,
		`t5,carol,5,`,
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		token      string
		wantGroups []string
	}{
		{name: "an ordinary user gains system:authenticated", token: "t1", wantGroups: []string{"dev", "ops", authn.AllAuthenticated}},
		{name: "system:anonymous without groups gains nothing", token: "t2"},
		{name: "system:anonymous keeps exactly its own groups", token: "t3", wantGroups: []string{"ops", authn.AllAuthenticated}},
		{name: "a user in system:unauthenticated gains nothing", token: "t4", wantGroups: []string{"ops", authn.AllUnauthenticated}},
		{name: "one empty group and system:authenticated", token: "t5", wantGroups: []string{"", authn.AllAuthenticated}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp, ok, err := a.AuthenticateToken(context.Background(), tt.token)
			if !ok || err != nil {
				t.Fatalf("got (%v, %v), want authenticated", ok, err)
			}
			if !reflect.DeepEqual(resp.User.Groups, tt.wantGroups) {
				t.Errorf("groups = %q, want %q", resp.User.Groups, tt.wantGroups)
			}
		})
	}
}

func TestHugeTokenIsRefusedWithoutHashing(t *testing.T) {
	a, _, err := Parse(strings.NewReader("tok,alice,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("t", 1<<20)
	allocs := testing.AllocsPerRun(10, func() {
		if resp, ok, err := a.AuthenticateToken(context.Background(), huge); resp != nil || ok || err != nil {
			t.Fatalf("got %v, %v, %v; want not found", resp, ok, err)
		}
	})
	if allocs != 0 {
		t.Errorf("a 1 MiB lookup allocated %v times, want 0", allocs)
	}
}

func TestLoadKeepsOldContentsOnError(t *testing.T) {
	t.Parallel()
	a, _, err := Parse(strings.NewReader("old,alice,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Load([]byte("new,bob,2\nbroken\n")); err == nil {
		t.Fatal("Load(invalid): got nil error, want one")
	}
	if _, ok, _ := a.AuthenticateToken(context.Background(), "old"); !ok {
		t.Error("after a failed Load the old token no longer authenticates")
	}
	if _, ok, _ := a.AuthenticateToken(context.Background(), "new"); ok {
		t.Error("after a failed Load a token of the rejected file authenticates")
	}
	if err := a.Load([]byte("new,bob,2\n")); err != nil {
		t.Fatalf("Load(valid): %v", err)
	}
	if _, ok, _ := a.AuthenticateToken(context.Background(), "old"); ok {
		t.Error("after Load the old token still authenticates")
	}
	if resp, ok, _ := a.AuthenticateToken(context.Background(), "new"); !ok || resp.User.Name != "bob" {
		t.Errorf("after Load: got %v, %v; want bob", resp, ok)
	}
}

func TestNewFromFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(path, []byte("tok,alice,1\ntok,bob,2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := NewFromFile(path)
	if err != nil {
		t.Fatalf("NewFromFile: %v", err)
	}
	if resp, ok, _ := a.AuthenticateToken(context.Background(), "tok"); !ok || resp.User.Name != "bob" {
		t.Errorf("got %v, %v; want bob", resp, ok)
	}
	if w := a.Warnings(); len(w) != 1 || !strings.Contains(w[0], path) {
		t.Errorf("Warnings() = %q, want one naming %s", w, path)
	}

	if _, err := NewFromFile(filepath.Join(dir, "missing.csv")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("NewFromFile(missing): error = %v, want os.ErrNotExist", err)
	}
	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("secret-token,alice\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = NewFromFile(bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "line 1") || strings.Contains(err.Error(), "secret-token") {
		t.Errorf("NewFromFile(bad): error = %v, want one naming the file and line 1 without the token", err)
	}
}

// TestConcurrentLoad swaps the contents while lookups run; run it with
// -race. Every lookup must see one complete version of the file.
func TestConcurrentLoad(t *testing.T) {
	t.Parallel()
	version := func(i int) []byte {
		return fmt.Appendf(nil, "stable,alice,1\nv%d,bob,%d\n", i, i)
	}
	a := &Authenticator{}
	if err := a.Load(version(0)); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, ok, err := a.AuthenticateToken(context.Background(), "stable"); !ok || err != nil {
					t.Errorf("stable token: ok=%v err=%v during reload", ok, err)
					return
				}
			}
		}()
	}
	for i := 1; i <= 200; i++ {
		if err := a.Load(version(i)); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			_ = a.Load([]byte("broken\n"))
		}
	}
	close(stop)
	wg.Wait()
	if _, ok, _ := a.AuthenticateToken(context.Background(), "v200"); !ok {
		t.Error("the last version is not in force")
	}
	if _, ok, _ := a.AuthenticateToken(context.Background(), "v199"); ok {
		t.Error("a replaced version is still in force")
	}
}
