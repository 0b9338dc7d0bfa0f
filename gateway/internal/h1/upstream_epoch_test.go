package h1

import (
	"context"
	"net"
	"testing"
)

// TestUpstreamDropsConnectionsOfAnEarlierEpoch: once the epoch (the client
// certificate) changes, a pooled connection is closed instead of being
// used again, and one coming back from a request is not pooled.
func TestUpstreamDropsConnectionsOfAnEarlierEpoch(t *testing.T) {
	epoch := "old"
	u := NewUpstream(func(context.Context) (net.Conn, error) { return nil, nil }, 4, 4)
	u.Epoch = func() any { return epoch }
	pipe := func() (*upstreamConn, net.Conn) {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return newUpstreamConn(a, u.epoch()), b
	}
	idle, idlePeer := pipe()
	u.put(idle)
	if got := u.get(); got != idle {
		t.Fatal("a connection of the current epoch was not reused")
	}
	u.put(idle)
	busy, busyPeer := pipe()
	epoch = "new"
	if got := u.get(); got != nil {
		t.Fatal("a connection of the earlier epoch was reused")
	}
	u.put(busy)
	if len(u.idle) != 0 {
		t.Errorf("%d connections of the earlier epoch pooled", len(u.idle))
	}
	for name, peer := range map[string]net.Conn{"pooled": idlePeer, "returned": busyPeer} {
		if _, err := peer.Write([]byte("x")); err == nil {
			t.Errorf("the %s connection of the earlier epoch is still open", name)
		}
	}
	fresh, _ := pipe()
	u.put(fresh)
	if got := u.get(); got != fresh {
		t.Error("a connection of the new epoch was not reused")
	}
}
