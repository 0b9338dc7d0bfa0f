package e2e

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestGatewaySurvivesHostileClients opens 10,000 idle connections, 200
// slowloris clients and sends oversized headers, and checks that a normal
// client is served throughout. Everything is bounded in count and time.
func TestGatewaySurvivesHostileClients(t *testing.T) {
	curl := requireTool(t, "curl")
	e := startGateway(t, curl)
	addr := strings.TrimPrefix(e.base, "https://")

	pair, err := tls.X509KeyPair(e.alice.CertPEM, e.alice.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: e.serverCA.Pool(), Certificates: []tls.Certificate{pair}},
	}}
	served := func(stage string) {
		t.Helper()
		resp, err := client.Get(e.base + "/api/v1/namespaces/default/pods")
		if err != nil {
			t.Fatalf("%s: normal request failed: %v", stage, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: normal request got %d", stage, resp.StatusCode)
		}
	}

	// 10,000 idle TCP connections that never speak.
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for i := 0; i < 10000; i++ {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		idle = append(idle, c)
	}
	served("with 10,000 idle connections")

	// 200 slowloris clients: a TLS handshake, then a header trickling in.
	var slow []net.Conn
	defer func() {
		for _, c := range slow {
			c.Close()
		}
	}()
	for i := 0; i < 200; i++ {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: e.serverCA.Pool()})
		if err != nil {
			t.Fatalf("slowloris %d: %v", i, err)
		}
		fmt.Fprintf(c, "GET /api/v1/pods HTTP/1.1\r\nHost: x\r\nX-Slow: ")
		slow = append(slow, c)
	}
	for i := 0; i < 3; i++ {
		for _, c := range slow {
			_, _ = c.Write([]byte("a"))
		}
		served("with slowloris clients")
	}

	// Oversized headers: refused with 431, and the gateway carries on.
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: e.serverCA.Pool(), NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		fmt.Fprintf(c, "GET /api/v1/pods HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 2<<20))
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("oversized header: %v", err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized header: status %d, want 431", resp.StatusCode)
	}
	served("after oversized headers")
}
