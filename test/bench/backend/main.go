// Command backend is the upstream of the gateway benchmark: a plain-HTTP,
// keep-alive server that answers every request with the same 470-byte Pod
// JSON and echoes the forwarded identity in X-Seen-User and X-Seen-Group.
// GET /stats counts requests, those that carried a client-spoofed X-Remote-*
// value (containing -spoof-marker), and those that arrived without
// X-Remote-User. It prints "listening on ADDR" once it accepts connections.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/kubegate/kubegate/test/bench/internal/bench"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "backend:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("backend", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:8080", "address to listen on (port 0 picks a free port)")
	marker := fs.String("spoof-marker", "spoofed", "X-Remote-* values containing this are counted as spoofed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *marker == "" {
		return errors.New("-spoof-marker: must not be empty")
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           bench.NewBackend(*marker),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       5 * time.Minute,
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	return srv.Serve(ln)
}
