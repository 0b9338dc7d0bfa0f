package serving

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/kubegate/kubegate/internal/filewatch"
)

// CAPool is a bundle of CA certificates loaded from a file and replaced
// whole when the file changes (Watch), so that a client trusts a new CA
// as soon as the bundle names it, during a CA rotation for instance.
type CAPool struct {
	file string
	cur  atomic.Pointer[x509.CertPool]
}

// LoadCAPool reads the PEM bundle at file.
func LoadCAPool(file string) (*CAPool, error) {
	p := &CAPool{file: file}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if err := p.Load(data); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return p, nil
}

// Load replaces the pool with the certificates in data; data without one
// is an error and the pool stays.
func (p *CAPool) Load(data []byte) error {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return errors.New("no PEM certificates found")
	}
	p.cur.Store(pool)
	return nil
}

// Watch reloads the pool whenever its file changes, until ctx is done.
func (p *CAPool) Watch(ctx context.Context, interval time.Duration, logger *slog.Logger) error {
	return filewatch.Watch(ctx, p.file, interval, p.Load, logger)
}

// Pool returns the current certificates.
func (p *CAPool) Pool() *x509.CertPool { return p.cur.Load() }
