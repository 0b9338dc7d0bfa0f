package gateway

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testpki"
)

// TestSilentConnectionGetsTheHeaderTimeout opens a TLS connection and
// sends nothing: it must be closed after the header timeout, as net/http
// closes one, not kept for the idle timeout.
func TestSilentConnectionGetsTheHeaderTimeout(t *testing.T) {
	e := newEnv(t, envOptions{headerTimeout: 300 * time.Millisecond, idleTimeout: 10 * time.Second})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	conn, _ := e.dialLean(t, alice)
	start := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := conn.Read(make([]byte, 1))
	if took := time.Since(start); err == nil || took > 2*time.Second {
		t.Errorf("a connection that sent nothing was closed after %v (read error %v), want about the 300ms header timeout", took.Round(time.Millisecond), err)
	}
}

// TestLargeHeadKeepsItsHeaderDeadline sends a head larger than the lean
// path's buffer, slowly: its first bytes within the header timeout, its
// end after it. The header timeout counts from the head's start on both
// sides of the hand-off to net/http, so the request is never answered.
func TestLargeHeadKeepsItsHeaderDeadline(t *testing.T) {
	e := newEnv(t, envOptions{headerTimeout: 400 * time.Millisecond, idleTimeout: 10 * time.Second})
	alice := e.clientCA.Issue(t, testpki.Options{CN: "alice"})
	conn, br := e.dialLean(t, alice)
	head := "GET /api/v1/pods HTTP/1.1\r\nHost: gw\r\nX-Big: " + strings.Repeat("a", 8000) + "\r\n\r\n"
	start := time.Now()
	// 1 KiB every 70ms: the lean buffer is full after about 280ms, the
	// head complete after about 560ms.
	go func() {
		for i := 0; i < len(head); i += 1024 {
			if _, err := io.WriteString(conn, head[i:min(i+1024, len(head))]); err != nil {
				return
			}
			time.Sleep(70 * time.Millisecond)
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := br.ReadString('\n')
	took := time.Since(start)
	if strings.HasPrefix(line, "HTTP/1.1 200") {
		t.Fatalf("a head completed %v after it began was answered %q; want the connection closed at the 400ms header timeout", took.Round(time.Millisecond), strings.TrimSpace(line))
	}
	if err == nil && !strings.HasPrefix(line, "HTTP/1.1 408") {
		t.Errorf("answer %q, want none or 408", line)
	}
	if took > 2*time.Second {
		t.Errorf("the connection was closed after %v, want about the 400ms header timeout", took.Round(time.Millisecond))
	}
}
