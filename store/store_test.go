package store

import (
	"errors"
	"testing"
)

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
		is   error
	}{
		{"compacted", &RevisionError{Requested: 5, Bound: 100, Err: ErrCompacted},
			"revision 5: revision has been compacted (oldest available 100)", ErrCompacted},
		{"compacted, bound unknown", &RevisionError{Requested: 5, Err: ErrCompacted},
			"revision 5: revision has been compacted", ErrCompacted},
		{"future", &RevisionError{Requested: 500, Bound: 100, Err: ErrFutureRevision},
			"revision 500: revision is in the future (current 100)", ErrFutureRevision},
		{"key", &KeyError{Op: "update", Key: "/pods/default/app", Err: ErrConflict},
			`update "/pods/default/app": key was modified since the expected revision`, ErrConflict},
		{"empty key", CheckKey("get", ""), `get "": invalid key`, ErrInvalidKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
			if !errors.Is(tc.err, tc.is) {
				t.Errorf("errors.Is(%v, %v) = false", tc.err, tc.is)
			}
		})
	}
	if err := CheckKey("get", "/a"); err != nil {
		t.Errorf("CheckKey of a valid key = %v", err)
	}
}

func TestEventTypeString(t *testing.T) {
	for typ, want := range map[EventType]string{Added: "ADDED", Modified: "MODIFIED", Deleted: "DELETED", Progress: "PROGRESS", 0: "EventType(0)"} {
		if got := typ.String(); got != want {
			t.Errorf("EventType(%d).String() = %q, want %q", int(typ), got, want)
		}
	}
}
