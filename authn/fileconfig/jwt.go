package fileconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/apis/apiserver"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/authn/jwt"
	"github.com/kubegate/kubegate/internal/filewatch"
)

// loadJWT adds the JWT authenticators of --authentication-config, which
// it keeps reloading, or of the --oidc-* flags, and the anonymous
// settings of the file (A.8).
func loadJWT(ctx context.Context, o Options, interval time.Duration, logger *slog.Logger, ac *authn.Config) error {
	if err := o.OIDC.Check(o.AuthenticationConfigFile); err != nil {
		return err
	}
	if path := o.AuthenticationConfigFile; path != "" {
		f := &jwtFile{ctx: ctx, o: o, path: path, log: logger, timeout: o.JWTUpdateTimeout}
		if f.timeout <= 0 {
			f.timeout = time.Minute
		}
		if err := filewatch.Watch(ctx, path, interval, f.load, logger); err != nil {
			return fmt.Errorf("--authentication-config: %w", err) // the error names the file
		}
		if f.anonymous != nil {
			ac.Anonymous, ac.AnonymousTrees = f.anonymous.Enabled, nil
			for _, c := range f.anonymous.Conditions {
				ac.AnonymousPaths = append(ac.AnonymousPaths, c.Path)
			}
		}
		ac.Tokens = append(ac.Tokens, f.a)
		return nil
	}
	j, ok, err := o.OIDC.Authenticator()
	if err != nil || !ok {
		return err
	}
	if err := jwt.Validate(&jwt.Config{JWT: []apiserver.JWTAuthenticator{j}}, o.SAIssuers); err != nil {
		return fmt.Errorf("--oidc-*: %w", err)
	}
	a, err := jwt.New(ctx, []apiserver.JWTAuthenticator{j}, jwt.Options{SigningAlgs: o.OIDC.SigningAlgs, DisallowedIssuers: o.SAIssuers, Logger: logger})
	if err != nil {
		return fmt.Errorf("--oidc-*: %w", err)
	}
	ac.Tokens = append(ac.Tokens, a)
	return nil
}

// jwtFile is an authentication configuration file in force.
type jwtFile struct {
	ctx     context.Context
	o       Options
	path    string
	log     *slog.Logger
	timeout time.Duration

	a         *jwt.Authenticator
	anonymous *apiserver.AnonymousAuthConfig

	// mu serializes updates; gen counts the file's versions, so that a
	// retry of an older one stops once a newer one has come.
	mu  sync.Mutex
	gen int
}

// load takes the file's contents: the first time it builds the
// authenticators; afterwards it replaces them, keeping the old ones when
// the new file is invalid or its issuers do not answer.
func (f *jwtFile) load(data []byte) error {
	// Any new contents, valid or not, supersede a version still being
	// retried.
	f.mu.Lock()
	f.gen++
	gen := f.gen
	f.mu.Unlock()
	cfg, err := jwt.ParseConfig(data)
	if err != nil {
		return err
	}
	if err := jwt.Validate(cfg, f.o.SAIssuers); err != nil {
		return err
	}
	if f.a == nil {
		if cfg.Anonymous != nil && f.o.AnonymousAuthSet {
			return errors.New("anonymous: Forbidden: --anonymous-auth cannot be set when the file has an anonymous section")
		}
		f.a, err = jwt.New(f.ctx, cfg.JWT, jwt.Options{DisallowedIssuers: f.o.SAIssuers, Logger: f.log, HealthPoll: f.o.JWTHealthPoll})
		if err != nil {
			return err
		}
		f.anonymous = cfg.Anonymous
		return nil
	}
	if !reflect.DeepEqual(f.anonymous, cfg.Anonymous) {
		return errors.New("anonymous: Forbidden: changed from the initial configuration file")
	}
	if err := f.update(gen, cfg); err != nil {
		// As kube-apiserver, try a valid file whose issuers did not
		// answer again, as long as the file still holds it.
		go f.retry(gen, cfg, data)
		return err
	}
	return nil
}

// update swaps in cfg's authenticators, unless a newer version of the file
// has come meanwhile.
func (f *jwtFile) update(gen int, cfg *jwt.Config) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if gen != f.gen {
		return nil
	}
	ctx, cancel := context.WithTimeout(f.ctx, f.timeout)
	defer cancel()
	if err := f.a.Update(ctx, cfg.JWT); err != nil {
		return err
	}
	f.log.Info("authentication configuration reloaded", "file", f.path, "jwt", len(cfg.JWT))
	return nil
}

// retry tries the version data of the file, generation gen, until it
// takes, a newer version comes, or the file no longer holds it (for
// example because it was put back as it was, which the watch does not
// report: those contents are in force already).
func (f *jwtFile) retry(gen int, cfg *jwt.Config, data []byte) {
	t := time.NewTicker(f.timeout)
	defer t.Stop()
	for {
		select {
		case <-f.ctx.Done():
			return
		case <-t.C:
		}
		f.mu.Lock()
		stale := gen != f.gen
		f.mu.Unlock()
		if now, err := os.ReadFile(f.path); stale || err != nil || !bytes.Equal(now, data) {
			return
		}
		err := f.update(gen, cfg)
		if err == nil {
			return
		}
		f.log.Error("authentication configuration not yet in force; trying again", "file", f.path, "err", err)
	}
}
