package apiserver

import (
	"slices"
	"testing"
)

// TestValidatePathSegmentName: the names of RBAC objects, and on create
// every object's name and generateName, must be one URL path segment
// (D.5, H.1), as kube-apiserver checks them.
func TestValidatePathSegmentName_D5(t *testing.T) {
	tests := []struct {
		name   string
		prefix bool
		want   []string
	}{
		{"view", false, nil},
		{"system:auth-delegator", false, nil},
		{".", false, []string{"may not be '.'"}},
		{"..", false, []string{"may not be '..'"}},
		{"...", false, nil},
		{".", true, nil},
		{"..", true, nil},
		{"a/b", false, []string{"may not contain '/'"}},
		{"a%b", true, []string{"may not contain '%'"}},
		{"a/%b", false, []string{"may not contain '/'", "may not contain '%'"}},
	}
	for _, tt := range tests {
		if got := ValidatePathSegmentName(tt.name, tt.prefix); !slices.Equal(got, tt.want) {
			t.Errorf("ValidatePathSegmentName(%q, %t) = %q, want %q", tt.name, tt.prefix, got, tt.want)
		}
	}
}
