// Command loadgen is the closed-loop HTTP load generator of the gateway
// benchmark. Each of -conns workers owns one connection (or, with
// -mode newconn, opens a new TCP connection and full TLS handshake per
// request) and sends the next request as soon as the previous answer is
// read, for -warmup plus -duration. It prints one JSON line:
//
//	requests, ok, errors   attempts started after the warm-up, and their split
//	warmup_requests, warmup_errors   the same for the warm-up
//	rps                    ok / measured seconds
//	p50_us p90_us p99_us max_us mean_us   latency of the ok requests
//	error_kinds            every failed attempt by kind, warm-up included
//
// Failures are never dropped: a transport error, a non-2xx status and a
// response header that fails a -check-header are each an error of its kind.
// With -report FILE it instead reads such lines (one per run) and prints the
// medians per scenario and system with ratios against reference systems.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/kubegate/kubegate/test/bench/internal/bench"
)

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

// kvList is a repeatable name=value flag.
type kvList [][2]string

func (l *kvList) String() string {
	parts := make([]string, len(*l))
	for i, kv := range *l {
		parts[i] = kv[0] + "=" + kv[1]
	}
	return strings.Join(parts, ",")
}

func (l *kvList) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want name=value", s)
	}
	*l = append(*l, [2]string{k, v})
	return nil
}

// config is one load run, as parsed from the flags.
type config struct {
	url       *url.URL
	duration  time.Duration
	warmup    time.Duration
	timeout   time.Duration
	conns     int
	streams   int  // requests in flight on each connection (HTTP/2)
	newConn   bool // a new connection and TLS handshake per request
	http2     bool
	tls       *tls.Config // nil for http:// URLs
	headers   kvList      // sent on every request; "Host" sets the request's host
	checks    kvList      // response headers that must hold exactly this value
	label     string      // the system under test, for -report
	scenario  string      // the scenario, for -report
	curveList string
	tags      kvList
}

func realMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfg                       config
		rawURL, mode              string
		certFile, keyFile, caFile string
		bearer, report, refs      string
		stealMax                  float64
	)
	fs.StringVar(&rawURL, "url", "", "URL to GET (https:// or http://)")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "measured run time")
	fs.DurationVar(&cfg.warmup, "warmup", 0, "run time before measuring; its successes are discarded, its errors are not")
	fs.DurationVar(&cfg.timeout, "timeout", 10*time.Second, "dial, handshake and response-header timeout per request")
	fs.IntVar(&cfg.conns, "conns", 1, "concurrent connections, one closed-loop worker each")
	fs.IntVar(&cfg.streams, "streams", 1, "with -http2: closed-loop workers per connection, each with one request in flight on it")
	fs.StringVar(&mode, "mode", "keepalive", "keepalive: reuse each connection; newconn: new connection and TLS handshake per request")
	fs.StringVar(&certFile, "cert", "", "client certificate (PEM) for mTLS")
	fs.StringVar(&keyFile, "key", "", "client key (PEM) for mTLS")
	fs.StringVar(&caFile, "cacert", "", "CA that verifies the server (PEM); empty: system roots")
	fs.StringVar(&bearer, "bearer", "", "send Authorization: Bearer TOKEN")
	fs.Var(&cfg.headers, "header", "request header name=value; repeatable, repeated names send several lines")
	fs.Var(&cfg.checks, "check-header", "response header name=value that every answer must carry exactly; repeatable")
	fs.BoolVar(&cfg.http2, "http2", false, "speak HTTP/2 (default HTTP/1.1)")
	fs.StringVar(&cfg.curveList, "curves", "", "key exchange groups offered, comma-separated (X25519, P256, X25519MLKEM768, …); empty: Go's defaults")
	fs.StringVar(&cfg.label, "label", "", "system name recorded in the output, for -report")
	fs.StringVar(&cfg.scenario, "scenario", "", "scenario name recorded in the output, for -report")
	fs.Var(&cfg.tags, "tag", "name=value recorded in the output; repeatable")
	fs.StringVar(&report, "report", "", "summarise the JSON lines in this file instead of generating load")
	fs.StringVar(&refs, "ref", "haproxy,nginx", "with -report: systems every other system is compared with")
	fs.Float64Var(&stealMax, "steal-max", -1, "with -report: leave out runs whose steal_pct tag is over this, unless all of a system's are; negative: keep every run")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "loadgen: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if report != "" {
		return runReport(report, strings.Split(refs, ","), stealMax, stdout, stderr)
	}
	if err := cfg.complete(rawURL, mode, certFile, keyFile, caFile, bearer); err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return 2
	}
	res := run(&cfg, stderr)
	line, err := json.Marshal(res)
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\n", line)
	if res.Errors+res.WarmupErrors > 0 || res.OK == 0 {
		return 1
	}
	return 0
}

// complete validates the flags that need more than parsing.
func (c *config) complete(rawURL, mode, certFile, keyFile, caFile, bearer string) error {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("-url %q: want an https:// or http:// URL with a host", rawURL)
	}
	c.url = u
	switch mode {
	case "keepalive":
	case "newconn":
		c.newConn = true
	default:
		return fmt.Errorf("-mode %q: want keepalive or newconn", mode)
	}
	if c.conns < 1 {
		return fmt.Errorf("-conns %d: want at least 1", c.conns)
	}
	if c.streams < 1 || (c.streams > 1 && (!c.http2 || c.newConn)) {
		return fmt.Errorf("-streams %d: want at least 1, and more only with -http2 and -mode keepalive", c.streams)
	}
	if c.duration <= 0 || c.warmup < 0 || c.timeout <= 0 {
		return errors.New("-duration and -timeout must be positive, -warmup not negative")
	}
	if bearer != "" {
		c.headers = append(c.headers, [2]string{"Authorization", "Bearer " + bearer})
	}
	if u.Scheme == "http" {
		if certFile != "" || caFile != "" || c.curveList != "" {
			return fmt.Errorf("-url %q: -cert, -cacert and -curves need an https:// URL", rawURL)
		}
		return nil
	}
	c.tls = &tls.Config{MinVersion: tls.VersionTLS12}
	if c.tls.CurvePreferences, err = bench.ParseCurves(c.curveList); err != nil {
		return fmt.Errorf("-curves: %w", err)
	}
	if (certFile == "") != (keyFile == "") {
		return errors.New("-cert and -key go together")
	}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("load -cert/-key: %w", err)
		}
		// Always present the certificate, as curl does, even when the
		// server names CAs that did not issue it: the server must refuse it.
		c.tls.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &cert, nil
		}
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return fmt.Errorf("read -cacert: %w", err)
		}
		c.tls.RootCAs = x509.NewCertPool()
		if !c.tls.RootCAs.AppendCertsFromPEM(pem) {
			return fmt.Errorf("read -cacert %q: no PEM certificates found", caFile)
		}
	}
	// No ClientSessionCache: every new connection is a full handshake.
	return nil
}
