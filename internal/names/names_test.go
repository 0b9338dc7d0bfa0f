package names

import (
	"strings"
	"testing"
)

func TestProblem(t *testing.T) {
	tests := []struct {
		value string
		want  string // a part of the problem; "" for none
	}{
		{"", ""},
		{"alice", ""},
		{"system:serviceaccount:default:builder", ""},
		{"two words", ""},
		{"Zoë", ""},
		{"X509SHA256=ab12", ""},
		{" kubernetes-admin ", "begins with whitespace (U+0020)"},
		{"system:masters ", "ends with whitespace (U+0020)"},
		{"\tadmin", "control character (U+0009)"},
		{"evil\nX-Remote-User: admin", "control character (U+000A)"},
		{"a\rb", "control character (U+000D)"},
		{"nul\x00", "control character (U+0000)"},
		{"del\x7f", "control character (U+007F)"},
		{"c1\u0085", "control character (U+0085)"},
		{"\u00a0admin", "begins with whitespace (U+00A0)"},
		{"admin\u3000", "ends with whitespace (U+3000)"},
		{"bad\xff", "not valid UTF-8"},
	}
	for _, tt := range tests {
		got := Problem(tt.value)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("Problem(%q) = %q, want %q", tt.value, got, tt.want)
		}
	}
}

// FuzzProblem checks the ASCII shortcut against the general rule.
func FuzzProblem(f *testing.F) {
	for _, s := range []string{"alice", " a", "a ", "a\tb", "Zoë", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Problem(s)
		trimmed := strings.TrimSpace(s) == s
		printable := !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f && r < 0xa0 })
		if (got == "") != (trimmed && printable && strings.ToValidUTF8(s, "") == s) {
			t.Errorf("Problem(%q) = %q", s, got)
		}
	})
}
