//go:build unix

package ca_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kubegate/kubegate/ca"
)

func owner(t *testing.T, path string) (uid, gid int) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}

func TestLockRotation_H6(t *testing.T) {
	t.Parallel()
	dir := rotationTree(t)
	unlock, err := ca.LockRotation(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ca.LockRotation(dir)
	if want := filepath.Join(dir, "pki/rotation.lock") + " exists: another kubegate ca rotate is running on " + dir; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("second lock: %v, want %q", err, want)
	}
	unlock()
	unlock, err = ca.LockRotation(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock()
}
