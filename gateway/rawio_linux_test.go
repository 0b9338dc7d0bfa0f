package gateway

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// tcpPair returns both ends of a loopback TCP connection, the first made
// raw.
func tcpPair(t *testing.T) (raw net.Conn, peer *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	p := <-accepted
	if p == nil {
		t.Fatal("accept failed")
	}
	raw = rawIO(c)
	if _, ok := raw.(*rawConn); !ok {
		t.Fatalf("rawIO(%T) = %T, want *rawConn", c, raw)
	}
	t.Cleanup(func() { raw.Close(); p.Close() })
	return raw, p.(*net.TCPConn)
}

func TestRawConn(t *testing.T) {
	t.Parallel()
	t.Run("bytes go both ways, large writes whole", func(t *testing.T) {
		t.Parallel()
		raw, peer := tcpPair(t)
		big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB: more than the socket buffers
		go func() {
			if _, err := raw.Write(big); err != nil {
				t.Errorf("Write: %v", err)
			}
		}()
		got := make([]byte, len(big))
		if _, err := io.ReadFull(peer, got); err != nil || !bytes.Equal(got, big) {
			t.Fatalf("peer read %d bytes, err %v; want the 1 MiB written", len(got), err)
		}
		if _, err := peer.Write([]byte("pong")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		n, err := io.ReadAtLeast(raw, buf, 4)
		if err != nil || string(buf[:n]) != "pong" {
			t.Fatalf("Read = %q, %v; want pong", buf[:n], err)
		}
	})
	t.Run("a closed peer reads as EOF", func(t *testing.T) {
		t.Parallel()
		raw, peer := tcpPair(t)
		peer.Close()
		if n, err := raw.Read(make([]byte, 8)); n != 0 || err != io.EOF {
			t.Fatalf("Read = %d, %v; want 0, EOF", n, err)
		}
	})
	t.Run("a read deadline times out as net's does", func(t *testing.T) {
		t.Parallel()
		raw, _ := tcpPair(t)
		if err := raw.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		_, err := raw.Read(make([]byte, 8))
		var ne net.Error
		if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("Read after the deadline = %v, want a timeout", err)
		}
	})
	t.Run("writing to a reset peer is an error, not a signal", func(t *testing.T) {
		t.Parallel()
		raw, peer := tcpPair(t)
		_ = peer.SetLinger(0) // close with a reset
		peer.Close()
		var err error
		deadline := time.Now().Add(5 * time.Second)
		for err == nil && time.Now().Before(deadline) {
			_, err = raw.Write([]byte("data"))
			time.Sleep(time.Millisecond)
		}
		var oe *net.OpError
		if !errors.As(err, &oe) || oe.Op != "write" {
			t.Fatalf("Write to a reset peer = %v, want a write OpError", err)
		}
	})
	t.Run("CloseWrite ends the peer's reading", func(t *testing.T) {
		t.Parallel()
		raw, peer := tcpPair(t)
		if err := raw.(interface{ CloseWrite() error }).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("peer Read after CloseWrite = %v, want EOF", err)
		}
	})
	t.Run("a closed connection fails to read", func(t *testing.T) {
		t.Parallel()
		raw, _ := tcpPair(t)
		raw.Close()
		if _, err := raw.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Read after Close = %v, want net.ErrClosed", err)
		}
	})
}

func TestRawIOLeavesOtherConnectionsAlone(t *testing.T) {
	t.Parallel()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := rawIO(a); got != a {
		t.Errorf("rawIO(pipe) = %T, want the pipe itself", got)
	}
}
