package ca

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// Phase is one step of a CA rotation (docs/kubernetes-behaviour.md H.6).
type Phase string

// The rotation phases, in order.
const (
	// PhaseTrustBoth mints the new CA and makes every trust bundle hold
	// the old and the new one.
	PhaseTrustBoth Phase = "trust-both"
	// PhaseReissue makes the new CA the signer and re-signs every leaf
	// and kubeconfig client certificate the old one signed.
	PhaseReissue Phase = "reissue"
	// PhaseDropOld removes the old CA from every bundle.
	PhaseDropOld Phase = "drop-old"
)

// DefaultMinTokenAge is the least time between reissue and drop-old of
// the service-account key: the lifetime of the tokens kubelets request
// for projected volumes (1 h), which they refresh at 80% of it.
const DefaultMinTokenAge = time.Hour

// Phases lists the phases in the order they run.
var Phases = []Phase{PhaseTrustBoth, PhaseReissue, PhaseDropOld}

// ParsePhase returns the phase named s.
func ParsePhase(s string) (Phase, error) {
	for _, p := range Phases {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown phase %q (want trust-both, reissue or drop-old)", s)
}

// The authorities a rotation can replace.
const (
	RotateCluster    = "cluster"     // pki/ca.crt and ca.key
	RotateFrontProxy = "front-proxy" // pki/front-proxy-ca.crt and .key
	RotateSA         = "sa"          // pki/sa.key and sa.pub
)

// RotateTargets lists the authorities in the order a rotation handles them.
var RotateTargets = []string{RotateCluster, RotateFrontProxy, RotateSA}

// ParseRotateTargets turns --ca values (cluster, front-proxy, sa, all) into
// a sorted, de-duplicated list in RotateTargets order.
func ParseRotateTargets(values []string) ([]string, error) {
	set := map[string]bool{}
	for _, v := range values {
		switch v = strings.TrimSpace(v); v {
		case "all":
			for _, t := range RotateTargets {
				set[t] = true
			}
		case RotateCluster, RotateFrontProxy, RotateSA:
			set[v] = true
		default:
			return nil, fmt.Errorf("--ca %q: want cluster, front-proxy, sa or all", v)
		}
	}
	var out []string
	for _, t := range RotateTargets {
		if set[t] {
			out = append(out, t)
		}
	}
	return out, nil
}

// Change is one file a rotation phase writes or removes.
type Change struct {
	Path   string // relative to DIR, with forward slashes
	Remove bool
	Why    string
	data   []byte
	mode   fs.FileMode
	// own is set when the file existed and the process may give it
	// back its owner: uid and gid are the old file's.
	own      bool
	uid, gid int
}

// RotationPlan is what one phase would do to a tree. Making it reads the
// tree and writes nothing.
type RotationPlan struct {
	Dir   string
	CAs   []string
	Phase Phase
	// Done is set when the phase has already run: Changes is empty and
	// applying the plan does nothing.
	Done bool
	// Before is the recorded state before the phase; nil for none.
	Before  *RotationState
	Changes []Change
	// Warnings name what the phase cannot see or check, one line each.
	Warnings []string
	// resigned holds the absolute paths of the files the plan re-signs.
	resigned map[string]bool
}

// Rotator plans and applies the phases of a CA rotation on the tree in
// Dir.
type Rotator struct {
	Dir string
	// Kubeconfigs edits DIR/*.conf. Required.
	Kubeconfigs KubeconfigEditor
	// CAValidity is the new CAs' lifetime; zero means DefaultCAValidity.
	// Re-signed leaves keep their own validity window.
	CAValidity time.Duration
	// MinTokenAge is how long after reissue drop-old of the
	// service-account key is refused, so that every token the old key
	// signed was refreshed; zero means DefaultMinTokenAge. Force drops
	// it earlier.
	MinTokenAge time.Duration
	Force       bool
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// WriteFile writes one file atomically with its mode, replacing what
	// was there; nil means fsutil.WriteFile. Remove deletes one file; nil
	// means os.Remove. Tests replace them to stop a phase midway.
	WriteFile func(path string, data []byte, mode fs.FileMode) error
	Remove    func(path string) error
	// Progress, when not nil, is told each step of Plan and Apply as it
	// begins, in a few words ("reissue: re-signing pki/apiserver.crt").
	Progress func(step string)
}

// step tells r.Progress what phase p does now.
func (r *Rotator) step(phase Phase, format string, args ...any) {
	if r.Progress != nil {
		r.Progress(string(phase) + ": " + fmt.Sprintf(format, args...))
	}
}

func (r *Rotator) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Plan works out what phase would change for the authorities cas (nil:
// those of the rotation in progress, or all three to start one). It
// refuses phases out of order, and a rotation of other authorities while
// one is in progress, with an error naming the next command.
func (r *Rotator) Plan(cas []string, phase Phase) (*RotationPlan, error) {
	if r.Kubeconfigs == nil {
		return nil, errors.New("rotation: no kubeconfig editor")
	}
	// pki/ and pki/rotation/ hold the state, the bundles and the keys
	// every phase reads and writes.
	if err := fsutil.NoLinkedDirs(r.Dir, filepath.FromSlash(RotationDir)); err != nil {
		return nil, err
	}
	st, err := ReadRotationState(r.Dir)
	if err != nil {
		return nil, err
	}
	if phase == "" {
		phase = st.Next()
	}
	// Running the phase just done again, with the same authorities or
	// none named, changes nothing.
	if st != nil && phase == st.Done && (cas == nil || slices.Equal(cas, st.CAs)) {
		return &RotationPlan{Dir: r.Dir, CAs: st.CAs, Phase: phase, Before: st, Done: true}, nil
	}
	if st.InProgress() {
		if cas == nil {
			cas = st.CAs
		} else if !slices.Equal(cas, st.CAs) {
			return nil, fmt.Errorf("a rotation of %s is in progress (%s); finish it first: kubegate ca rotate --dir %s",
				strings.Join(st.CAs, ", "), doneText(st), r.Dir)
		}
	} else if cas == nil {
		cas = slices.Clone(RotateTargets)
	}
	if len(cas) == 0 {
		return nil, errors.New("--ca: name at least one of cluster, front-proxy, sa or all")
	}
	p := &RotationPlan{Dir: r.Dir, CAs: cas, Phase: phase, Before: st}
	r.step(phase, "reading the tree for %s", strings.Join(cas, ", "))
	next := st.Next()
	switch {
	case phase == next:
	case !st.InProgress():
		return nil, fmt.Errorf("phase %s cannot run: no CA rotation is in progress; start one with kubegate ca rotate --dir %s --phase trust-both", phase, r.Dir)
	default:
		return nil, fmt.Errorf("phase %s cannot run now: the rotation of %s is at %s, so the next phase is %s (kubegate ca rotate --dir %s --phase %s)",
			phase, strings.Join(cas, ", "), doneText(st), next, r.Dir, next)
	}
	switch phase {
	case PhaseTrustBoth:
		err = r.planTrustBoth(p, st)
	case PhaseReissue:
		err = r.planReissue(p, st)
	default:
		err = r.planDropOld(p, st)
	}
	if err != nil {
		return nil, err
	}
	if err := r.settle(p); err != nil {
		return nil, err
	}
	return p, nil
}

// settle checks every file the plan writes and carries its mode and
// owner over: a file is replaced by a rename, so a symbolic link would
// become a regular file and leave its target as it was (refused), and a
// new file would get the default mode and the running user. The new file
// gets the stricter of its old mode and the default one, and, when the
// process may (as root), the old owner. No file is written or removed
// through a linked directory (fsutil.NoLinkedDirs).
func (r *Rotator) settle(p *RotationPlan) error {
	if err := noLinkedDirs(r.Dir, p.Changes); err != nil {
		return err
	}
	for i := range p.Changes {
		c := &p.Changes[i]
		if c.Remove {
			continue
		}
		path := filepath.Join(r.Dir, filepath.FromSlash(c.Path))
		fi, err := os.Lstat(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, _ := os.Readlink(path)
			return fmt.Errorf("%s is a symbolic link (to %s); a rotation replaces files and would leave its target unchanged: make it a regular file, then run the phase again", path, target)
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		c.mode &= fi.Mode().Perm()
		if os.Geteuid() == 0 {
			c.uid, c.gid, c.own = fileOwner(fi)
		}
	}
	return nil
}

// noLinkedDirs refuses, before anything is written, a change whose
// directory inside dir is reached through a symbolic link.
func noLinkedDirs(dir string, changes []Change) error {
	for _, c := range changes {
		if err := fsutil.NoLinkedDirs(dir, filepath.Dir(filepath.FromSlash(c.Path))); err != nil {
			return err
		}
	}
	return nil
}

// Apply makes the plan's changes in order, each file atomically. A phase
// stopped midway is finished by running it again.
func (r *Rotator) Apply(p *RotationPlan) error {
	write := r.WriteFile
	if write == nil {
		write = func(path string, data []byte, mode fs.FileMode) error {
			return fsutil.WriteFile(path, data, mode, true)
		}
	}
	remove := r.Remove
	if remove == nil {
		remove = os.Remove
	}
	// Checked again: a directory may have been replaced by a link since
	// the plan was made.
	if err := noLinkedDirs(p.Dir, p.Changes); err != nil {
		return err
	}
	for i, c := range p.Changes {
		path := filepath.Join(p.Dir, filepath.FromSlash(c.Path))
		verb := "writing"
		if c.Remove {
			verb = "removing"
		}
		r.step(p.Phase, "%s %s (%d/%d)", verb, c.Path, i+1, len(p.Changes))
		if c.Remove {
			err := remove(path)
			if c.Path == RotationDir && errors.Is(err, syscall.ENOTEMPTY) {
				continue // files of someone else's stay, and so does their directory
			}
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove %s: %w", path, err)
			}
			continue
		}
		if err := write(path, c.data, c.mode); err != nil {
			return err
		}
		if c.own {
			if err := os.Chown(path, c.uid, c.gid); err != nil {
				return err
			}
		}
	}
	return nil
}

// readFile reads a file of the tree by its slash path.
func (r *Rotator) readFile(rel string) ([]byte, error) {
	return os.ReadFile(filepath.Join(r.Dir, filepath.FromSlash(rel)))
}

// change adds a write of data to rel unless rel already holds exactly
// data.
func (r *Rotator) change(p *RotationPlan, rel string, data []byte, mode fs.FileMode, why string) error {
	cur, err := r.readFile(rel)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err == nil && bytes.Equal(cur, data) {
		return nil
	}
	p.Changes = append(p.Changes, Change{Path: rel, Why: why, data: data, mode: mode})
	return nil
}

// Files lists the paths the plan writes or removes, in order, each once;
// the rotation state is left out.
func (p *RotationPlan) Files() []string {
	var out []string
	for _, c := range p.Changes {
		if c.Path != RotationStateFile && !slices.Contains(out, c.Path) {
			out = append(out, c.Path)
		}
	}
	return out
}
