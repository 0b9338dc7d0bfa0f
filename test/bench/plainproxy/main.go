// Command plainproxy is the naive baseline of the gateway benchmark: the
// straightforward Go way to do the gateway's job with httputil.ReverseProxy
// (see bench.NewPlainProxy). It requires a client certificate that verifies
// against -cacert, replaces client-supplied X-Remote-* headers with the
// certificate's CN and O, and proxies over a keep-alive pool to a plain-HTTP
// upstream. It prints "listening on ADDR" once it accepts connections.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/kubegate/kubegate/test/bench/internal/bench"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "plainproxy:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("plainproxy", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8443", "address to listen on (port 0 picks a free port)")
	upstream := fs.String("upstream", "", "plain-HTTP upstream URL, e.g. http://127.0.0.1:8080")
	certFile := fs.String("cert", "", "serving certificate (PEM)")
	keyFile := fs.String("key", "", "serving key (PEM)")
	caFile := fs.String("cacert", "", "CA that client certificates must verify against (PEM)")
	curveList := fs.String("curves", "", "key exchange groups, comma-separated (X25519, P256, X25519MLKEM768, …); empty: Go's defaults")
	upstreamConns := fs.Int("upstream-conns", 256, "idle keep-alive connections kept to the upstream")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *upstream == "" || *certFile == "" || *keyFile == "" || *caFile == "" {
		return errors.New("-upstream, -cert, -key and -cacert are required")
	}
	target, err := url.Parse(*upstream)
	if err != nil || target.Scheme != "http" || target.Host == "" {
		return fmt.Errorf("-upstream %q: want an http:// URL with a host", *upstream)
	}
	curves, err := bench.ParseCurves(*curveList)
	if err != nil {
		return fmt.Errorf("-curves: %w", err)
	}
	tlsConfig, err := bench.ServerTLSConfig(*certFile, *keyFile, *caFile, curves)
	if err != nil {
		return err
	}
	logger := log.New(os.Stderr, "plainproxy: ", log.LstdFlags)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           bench.NewPlainProxy(target, *upstreamConns, logger),
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          logger,
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	return srv.ServeTLS(ln, "", "")
}
