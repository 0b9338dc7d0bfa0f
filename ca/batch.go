package ca

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// ParseUsers reads a users file: one identity per record, the CN first
// and then one field per group (O), in order. Blank lines and lines
// starting with # are skipped. Whitespace before a field is dropped; any
// other whitespace at either end of a name, and any control character in
// one (a quoted field may hold both), fails ValidateName. name is used in
// errors, which give the line.
func ParseUsers(name string, r io.Reader) ([]Request, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	var reqs []Request
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("users file %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		req := Request{CN: rec[0], Orgs: rec[1:]}
		if err := req.Validate(); err != nil {
			return nil, fmt.Errorf("users file %s line %d: %w", name, line, err)
		}
		reqs = append(reqs, req)
	}
	if len(reqs) == 0 {
		return nil, fmt.Errorf("users file %s has no identities", name)
	}
	return reqs, nil
}

// FileStem turns a CN into a file name: characters other than letters,
// digits, '.', '-' and '_' become '_' ("system:node:a" → "system_node_a").
func FileStem(cn string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, cn)
}

// BatchOptions tune IssueFiles.
type BatchOptions struct {
	// Workers generate keys and sign; 0 means GOMAXPROCS.
	Workers int
	// Chunk is how many certificates are written per durable batch
	// (fsutil.WriteFiles: one file-system flush per batch); 0 means 512.
	Chunk int
	// Overwrite replaces existing files.
	Overwrite bool
	// Progress, when not nil, is told after each certificate is signed
	// how many of len(reqs) are; it is called from one goroutine at a
	// time.
	Progress func(done, total int)
}

// IssueFiles issues every request and writes PREFIX.key and PREFIX.crt
// for each, prefixes[i] belonging to reqs[i]. Signing runs on a pool of
// workers sharing the one parsed CA; one writer writes the results in
// durable batches while the signers go on. The first error stops the run.
func (a *Authority) IssueFiles(ctx context.Context, reqs []Request, prefixes []string, opt BatchOptions) error {
	if len(reqs) != len(prefixes) {
		return errors.New("issue files: one prefix per request is required")
	}
	// Each profile is resolved once; every certificate copies its template.
	profiles := map[string]*profileTemplate{}
	for i := range reqs {
		if err := reqs[i].Validate(); err != nil {
			return err
		}
		name := reqs[i].profileName()
		if profiles[name] == nil {
			lp, err := a.leafProfile(name)
			if err != nil {
				return err
			}
			profiles[name] = lp
		}
	}
	if opt.Workers <= 0 {
		opt.Workers = runtime.GOMAXPROCS(0)
	}
	if opt.Chunk <= 0 {
		opt.Chunk = 512
	}
	type result struct {
		i               int
		keyPEM, certPEM []byte
	}
	g, ctx := errgroup.WithContext(ctx)
	jobs := make(chan int, opt.Workers)
	done := make(chan result, opt.Chunk)
	g.Go(func() error {
		defer close(jobs)
		for i := range reqs {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return nil
			}
		}
		return nil
	})
	signers, _ := errgroup.WithContext(ctx)
	for range opt.Workers {
		signers.Go(func() error {
			for i := range jobs {
				r := &reqs[i]
				der, keyPEM, err := a.issueDER(r, profiles[r.profileName()])
				if err != nil {
					return err
				}
				select {
				case done <- result{i, keyPEM, EncodeCert(der)}:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
	}
	g.Go(func() error {
		defer close(done)
		return signers.Wait()
	})
	// One writer: while it flushes a batch, the signers fill the next.
	g.Go(func() error {
		batch := make([]fsutil.File, 0, 2*opt.Chunk)
		signed := 0
		for r := range done {
			if signed++; opt.Progress != nil {
				opt.Progress(signed, len(reqs))
			}
			p := prefixes[r.i]
			batch = append(batch,
				fsutil.File{Path: p + ".key", Data: r.keyPEM, Mode: fsutil.ModeKey, Overwrite: opt.Overwrite},
				fsutil.File{Path: p + ".crt", Data: r.certPEM, Mode: fsutil.ModePublic, Overwrite: opt.Overwrite})
			if len(batch) >= 2*opt.Chunk {
				if err := fsutil.WriteFiles(batch); err != nil {
					return err
				}
				batch = batch[:0]
			}
		}
		return fsutil.WriteFiles(batch)
	})
	return g.Wait()
}

// Prefixes returns dir/FileStem(cn) for each request, refusing two
// requests that would share files.
func Prefixes(dir string, reqs []Request) ([]string, error) {
	seen := make(map[string]string, len(reqs))
	out := make([]string, len(reqs))
	for i, r := range reqs {
		stem := FileStem(r.CN)
		if prev, ok := seen[stem]; ok {
			return nil, fmt.Errorf("identities %q and %q would both be written to %s.crt", prev, r.CN, filepath.Join(dir, stem))
		}
		seen[stem] = r.CN
		out[i] = filepath.Join(dir, stem)
	}
	return out, nil
}
