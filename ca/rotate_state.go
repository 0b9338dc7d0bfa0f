package ca

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// RotationStateFile is where a rotation records its progress, relative
// to DIR. RotationDir holds the new CAs and key until drop-old.
const (
	RotationStateFile = PKIDir + "/rotation.json"
	RotationDir       = PKIDir + "/rotation"
	// RotationLockFile exists while a phase runs (LockRotation).
	RotationLockFile = PKIDir + "/rotation.lock"
)

// RotationState is the content of RotationStateFile.
type RotationState struct {
	// CAs are the authorities being rotated, in RotateTargets order.
	CAs []string `json:"cas"`
	// Done is the last phase completed; "" when trust-both was started
	// but has not finished. drop-old means the rotation is over.
	Done Phase `json:"done"`
	// Keys holds, by authority, the SHA-256 fingerprints of the old and
	// the new CA certificate (of the public key for sa).
	Keys map[string]RotationKeys `json:"keys"`
	// Updated is when Done was last written.
	Updated time.Time `json:"updated"`
	// Reissued is when reissue finished: from then on only the new
	// service-account key signs tokens. drop-old of sa waits for the
	// tokens signed before it to be refreshed.
	Reissued time.Time `json:"reissued,omitzero"`
}

// RotationKeys are the fingerprints of one authority's old and new key.
type RotationKeys struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// InProgress reports whether a rotation has started and not finished.
func (s *RotationState) InProgress() bool { return s != nil && s.Done != PhaseDropOld }

// Next is the phase that runs next: trust-both when no rotation is in
// progress.
func (s *RotationState) Next() Phase {
	switch {
	case !s.InProgress():
		return PhaseTrustBoth
	case s.Done == "":
		return PhaseTrustBoth
	case s.Done == PhaseTrustBoth:
		return PhaseReissue
	default:
		return PhaseDropOld
	}
}

// ReadRotationState reads DIR/pki/rotation.json; nil when there is none.
func ReadRotationState(dir string) (*RotationState, error) {
	path := filepath.Join(dir, filepath.FromSlash(RotationStateFile))
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s RotationState
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The list must be exactly what the rotation wrote: a normalised one.
	if norm, err := ParseRotateTargets(s.CAs); err != nil || len(s.CAs) == 0 || !slices.Equal(norm, s.CAs) {
		return nil, fmt.Errorf("%s: cas %q must name cluster, front-proxy and sa, each at most once and in that order", path, s.CAs)
	}
	if s.Done != "" {
		if _, err := ParsePhase(string(s.Done)); err != nil {
			return nil, fmt.Errorf("%s: done: %w", path, err)
		}
	}
	for _, c := range s.CAs {
		if k := s.Keys[c]; k.Old == "" || k.New == "" {
			return nil, fmt.Errorf("%s: keys.%s: old and new fingerprints are required", path, c)
		}
	}
	return &s, nil
}

// RotationStatus says, in one line, where a rotation in progress stands
// and what to run next.
func RotationStatus(dir string, st *RotationState) string {
	return fmt.Sprintf("the rotation of %s stopped with %s; next: kubegate ca rotate --dir %s --phase %s",
		strings.Join(st.CAs, ", "), doneText(st), dir, st.Next())
}

func doneText(st *RotationState) string {
	if st.Done == "" {
		return "trust-both started, not finished"
	}
	return string(st.Done) + " done"
}

// state returns a change writing the rotation state.
func (r *Rotator) state(s *RotationState, why string) (Change, error) {
	s.Updated = r.now().UTC().Truncate(time.Second)
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return Change{}, err
	}
	return Change{Path: RotationStateFile, Why: why, data: append(data, '\n'), mode: fsutil.ModePublic}, nil
}

func cloneState(s *RotationState) *RotationState {
	c := *s
	c.CAs = slices.Clone(s.CAs)
	c.Keys = map[string]RotationKeys{}
	for k, v := range s.Keys {
		c.Keys[k] = v
	}
	return &c
}
