// Package etcdtest runs a one-member etcd in-process on loopback, for tests
// of kubegate's etcd store and of API servers sharing one etcd.
package etcdtest

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

// Server is a running etcd member.
type Server struct {
	Etcd *embed.Etcd
	// PlainURL serves clients without TLS.
	PlainURL string
	// TLSURL serves clients with mTLS; empty when Start had no TLS.
	TLSURL string
}

// Start runs an etcd member with its data in dir. It always listens for
// plain clients; with tls it also listens for clients that present a
// certificate signed by tls.TrustedCAFile.
func Start(dir string, tls *transport.TLSInfo) (*Server, error) {
	schemes := []string{"http", "http"} // peer, plain client
	if tls != nil {
		schemes = append(schemes, "https")
	}
	urls := make([]url.URL, len(schemes))
	for i, s := range schemes {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		urls[i] = url.URL{Scheme: s, Host: l.Addr().String()}
		l.Close()
	}
	cfg := embed.NewConfig()
	cfg.Name = "test"
	cfg.Dir = filepath.Join(dir, "data")
	cfg.LogLevel = "error"
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = urls[:1], urls[:1]
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = urls[1:], urls[1:]
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	if tls != nil {
		cfg.ClientTLSInfo = *tls
		cfg.ClientTLSInfo.ClientCertAuth = true
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, err
	case <-time.After(time.Minute):
		e.Close()
		return nil, fmt.Errorf("etcd not ready after a minute")
	}
	s := &Server{Etcd: e, PlainURL: urls[1].String()}
	if tls != nil {
		s.TLSURL = urls[2].String()
	}
	return s, nil
}

// Close stops the member.
func (s *Server) Close() { s.Etcd.Close() }
