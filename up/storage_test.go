package up

import "testing"

// The default StorageClass names the simulated provisioner, which runs in
// the volume binder: kubegate up makes the class only when the binder is
// among its controllers (G.20).
func TestDefaultStorageClassFollowsTheBinder_G20(t *testing.T) {
	for _, tc := range []struct {
		controllers []string
		want        bool
	}{
		{nil, true},
		{[]string{"*"}, true},
		{[]string{"*", "-persistentvolume-binder"}, false},
		{[]string{"deployment"}, false},
		{[]string{"persistentvolume-binder"}, true},
	} {
		c := &Cluster{Controllers: tc.controllers}
		got, err := c.runs("persistentvolume-binder")
		if err != nil || got != tc.want {
			t.Errorf("controllers %q: runs the binder = %v, %v; want %v", tc.controllers, got, err, tc.want)
		}
	}
	if _, err := (&Cluster{Controllers: []string{"no-such"}}).runs("persistentvolume-binder"); err == nil {
		t.Error("an unknown controller was accepted")
	}
}
