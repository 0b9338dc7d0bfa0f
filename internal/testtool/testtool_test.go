package testtool

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortCanBeListenedOn(t *testing.T) {
	p := FreePort(t)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("port %d from FreePort: %v", p, err)
	}
	l.Close()
}

func TestRequireFindsATool(t *testing.T) {
	if p := Require(t, "go"); p == "" {
		t.Fatal("Require(go) returned no path")
	}
}
