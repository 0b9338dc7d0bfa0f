package server

import (
	"bufio"
	"context"
	"errors"
	"github.com/kubegate/kubegate/internal/serving"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubegate/kubegate/internal/testpki"
)

// fallbackFunc is a RoundTripper for the upgrade path.
type fallbackFunc func(*http.Request) (*http.Response, error)

func (f fallbackFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// newTestTransport returns an in-process transport to h presenting a
// front-proxy-client certificate issued by a fresh CA.
func newTestTransport(t *testing.T, h http.Handler, fallback http.RoundTripper) (*inProcessTransport, *localRequests) {
	t.Helper()
	ca := testpki.NewCA(t, "front-proxy-ca")
	certFile, keyFile := ca.Issue(t, testpki.Options{CN: "front-proxy-client"}).WriteFiles(t, t.TempDir(), "front-proxy-client")
	kp, err := serving.LoadKeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	local := newLocalRequests()
	t.Cleanup(local.endStreams)
	return &inProcessTransport{handler: h, local: local, cert: kp, fallback: fallback}, local
}

// inProcessTestMux serves what TestInProcessTransport asks for: /echo
// answers what it was sent and how, /teapot, /empty and /big answer
// fixed bodies, and /watch streams each line sent on streamed until the
// request ends, reported on released.
func inProcessTestMux(streamed <-chan string, released chan<- error) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("X-Peer", r.TLS.PeerCertificates[0].Subject.CommonName)
		w.Header().Set("X-Path", r.URL.Path+"?"+r.URL.RawQuery)
		w.Header().Set("X-Host", r.Host)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
	mux.HandleFunc("/teapot", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = io.WriteString(w, "short and stout")
	})
	mux.HandleFunc("/empty", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		for range 100 {
			_, _ = w.Write([]byte(strings.Repeat("x", 1000) + "\n"))
		}
	})
	mux.HandleFunc("/watch", func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		w.Header().Set("Transfer-Encoding", "chunked")
		w.WriteHeader(http.StatusOK)
		_ = rc.Flush()
		for {
			select {
			case ev := <-streamed:
				_, _ = io.WriteString(w, ev+"\n")
				_ = rc.Flush()
			case <-r.Context().Done():
				released <- r.Context().Err()
				return
			}
		}
	})
	return mux
}

func TestInProcessTransport(t *testing.T) {
	t.Parallel()
	streamed := make(chan string)
	released := make(chan error, 1)
	mux := inProcessTestMux(streamed, released)
	var upgrades atomic.Int32
	fallback := fallbackFunc(func(r *http.Request) (*http.Response, error) {
		upgrades.Add(1)
		return &http.Response{StatusCode: http.StatusSwitchingProtocols, Header: http.Header{}, Body: http.NoBody, Request: r}, nil
	})
	rt, _ := newTestTransport(t, mux, fallback)
	client := &http.Client{Transport: rt}
	get := func(t *testing.T, ctx context.Context, path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://apiserver.local"+path, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}

	t.Run("status codes and bodies", func(t *testing.T) {
		for _, tc := range []struct {
			path string
			code int
			body string
		}{
			{"/teapot", http.StatusTeapot, "short and stout"},
			{"/empty", http.StatusOK, ""},
			{"/nowhere", http.StatusNotFound, "404 page not found\n"},
			{"/big", http.StatusOK, strings.Repeat(strings.Repeat("x", 1000)+"\n", 100)},
		} {
			t.Run(strings.TrimPrefix(tc.path, "/"), func(t *testing.T) {
				resp := get(t, context.Background(), tc.path)
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != tc.code || string(body) != tc.body {
					t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tc.code, tc.body)
				}
			})
		}
	})

	t.Run("request reaches the handler as over TLS", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, "https://apiserver.local/echo?a=b%20c", strings.NewReader("payload"))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for _, c := range []struct{ name, got, want string }{
			{"status", resp.Status, "201 Created"},
			{"body", string(body), "payload"},
			{"peer", resp.Header.Get("X-Peer"), "front-proxy-client"},
			{"path", resp.Header.Get("X-Path"), "/echo?a=b%20c"},
			{"host", resp.Header.Get("X-Host"), "apiserver.local"},
		} {
			if c.got != c.want {
				t.Errorf("%s: got %q, want %q", c.name, c.got, c.want)
			}
		}
	})

	t.Run("watch streams per event and closing ends the handler", func(t *testing.T) {
		resp := get(t, context.Background(), "/watch")
		if resp.ContentLength != -1 || resp.Header.Get("Transfer-Encoding") != "" {
			t.Errorf("got length %d, Transfer-Encoding %q; want a stream", resp.ContentLength, resp.Header.Get("Transfer-Encoding"))
		}
		br := bufio.NewReader(resp.Body)
		for _, ev := range []string{"ADDED", "MODIFIED"} {
			streamed <- ev // the handler writes it only now
			line, err := br.ReadString('\n')
			if err != nil || line != ev+"\n" {
				t.Fatalf("got %q, %v; want %q", line, err, ev)
			}
		}
		resp.Body.Close()
		select {
		case err := <-released:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("handler context: got %v, want canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("handler still running after the body was closed")
		}
	})

	t.Run("cancelling the request cancels the handler", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		resp := get(t, ctx, "/watch")
		defer resp.Body.Close()
		cancel()
		select {
		case err := <-released:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("handler context: got %v, want canceled", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("handler still running after the request was cancelled")
		}
		if _, err := io.ReadAll(resp.Body); err == nil {
			t.Error("reading a cancelled stream: got no error")
		}
	})

	t.Run("upgrades go to the fallback", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, "https://apiserver.local/api/v1/namespaces/default/pods/app/exec", nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "SPDY/3.1")
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSwitchingProtocols || upgrades.Load() != 1 {
			t.Errorf("got %d with %d fallback calls, want 101 with 1", resp.StatusCode, upgrades.Load())
		}
	})
}

func TestInProcessTransportRefusesAfterShutdown(t *testing.T) {
	t.Parallel()
	rt, local := newTestTransport(t, http.NotFoundHandler(), nil)
	local.close()
	req := httptest.NewRequest(http.MethodGet, "https://apiserver.local/", nil)
	if _, err := rt.RoundTrip(req); !errors.Is(err, errShuttingDown) {
		t.Errorf("got %v, want %v", err, errShuttingDown)
	}
}
