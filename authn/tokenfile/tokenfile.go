// Package tokenfile authenticates static bearer tokens listed in a CSV file,
// in the format of kube-apiserver's --token-auth-file:
//
//	token,user,uid[,"group1,group2"]
//
// The file is read with encoding/csv defaults (RFC 4180 quoting, no comment
// character, no whitespace trimming, blank lines skipped, any number of
// columns per record). A record needs at least three columns; the fourth,
// when present, is split on commas into groups; later columns are ignored.
// A record with an empty token is skipped with a warning, and when a token
// appears twice the last record wins, with a warning.
//
// Tokens are kept only as SHA-256 hashes. A lookup hashes the presented
// token, finds candidates by a prefix of the hash and confirms the full hash
// in constant time. Errors and warnings name line numbers, never tokens.
//
// The contents can be replaced at any time with Load; the swap is atomic and
// invalid new contents leave the old ones in force.
package tokenfile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/kubegate/kubegate/authn"
)

// Name is the value of authn.Response.Authenticator for tokens found here.
const Name = "tokenfile"

// ErrTooFewColumns is wrapped by the error for a record with fewer than
// three columns.
var ErrTooFewColumns = errors.New("must have at least 3 columns (token, user name, user uid)")

// Authenticator authenticates bearer tokens against the loaded token file.
// The zero value holds no tokens and is ready to use; it is safe for
// concurrent use, including Load while tokens are being authenticated.
type Authenticator struct {
	// Source names the contents in error messages, for example the file
	// path. Set it before the first Load. Empty means "token file".
	Source string

	tab atomic.Pointer[table]
}

var _ authn.Token = (*Authenticator)(nil)

// table is one immutable parsed file.
type table struct {
	// byPrefix maps the first 8 bytes of a token's SHA-256 to the entries
	// whose hash starts with them (almost always exactly one).
	byPrefix map[uint64][]entry
	n        int
	// maxLen is the length of the longest token; longer tokens are not
	// hashed at all, so a 1 MiB token costs nothing.
	maxLen   int
	warnings []string
}

type entry struct {
	hash [sha256.Size]byte
	// resp is returned, read-only, by every lookup of this token.
	resp authn.Response
}

// Parse reads a token file from r. It returns an Authenticator holding the
// contents and the warnings found (empty and duplicate tokens). The error
// for a malformed record names its line.
func Parse(r io.Reader) (*Authenticator, []string, error) {
	a := &Authenticator{}
	t, err := parse(r, a.source())
	if err != nil {
		return nil, nil, err
	}
	a.tab.Store(t)
	return a, t.warnings, nil
}

// NewFromFile reads the token file at path. A missing or malformed file is
// an error, as it is for kube-apiserver. Warnings are available from
// Warnings.
func NewFromFile(path string) (*Authenticator, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read token file: %w", err)
	}
	a := &Authenticator{Source: path}
	if err := a.Load(data); err != nil {
		return nil, err
	}
	return a, nil
}

// Load parses data as a token file and, if it is valid, atomically replaces
// the current contents with it. If data is invalid the current contents stay
// in force and the error names the first bad line.
func (a *Authenticator) Load(data []byte) error {
	t, err := parse(bytes.NewReader(data), a.source())
	if err != nil {
		return err
	}
	a.tab.Store(t)
	return nil
}

// Warnings returns the warnings found when the current contents were loaded:
// records skipped for an empty token and tokens defined more than once.
func (a *Authenticator) Warnings() []string {
	if t := a.tab.Load(); t != nil {
		return append([]string(nil), t.warnings...)
	}
	return nil
}

// Len returns the number of distinct tokens currently loaded.
func (a *Authenticator) Len() int {
	if t := a.tab.Load(); t != nil {
		return t.n
	}
	return 0
}

// AuthenticateToken looks the token up. An unknown token is "not mine":
// (nil, false, nil), so that other token authenticators may try it. The
// returned Response is shared by every lookup of the token, like a cached
// response: callers must copy it before changing it. Its Groups slice has
// no spare capacity, so appending to a copy's Groups never writes into it.
func (a *Authenticator) AuthenticateToken(_ context.Context, token string) (*authn.Response, bool, error) {
	t := a.tab.Load()
	if t == nil || token == "" || len(token) > t.maxLen {
		return nil, false, nil
	}
	sum := hashToken(token)
	cands := t.byPrefix[binary.LittleEndian.Uint64(sum[:8])]
	for i := range cands {
		e := &cands[i]
		if subtle.ConstantTimeCompare(e.hash[:], sum[:]) == 1 {
			return &e.resp, true, nil
		}
	}
	return nil, false, nil
}

func (a *Authenticator) source() string {
	if a.Source == "" {
		return "token file"
	}
	return fmt.Sprintf("token file %q", a.Source)
}

// hashToken returns the SHA-256 of token. Tokens of usual length are
// copied to a stack buffer first, which saves the heap allocation of a
// string-to-slice conversion.
func hashToken(token string) [sha256.Size]byte {
	if len(token) <= 256 {
		var buf [256]byte
		return sha256.Sum256(append(buf[:0], token...))
	}
	return sha256.Sum256([]byte(token))
}

// parse reads records with the same csv settings kube-apiserver uses.
func parse(r io.Reader, source string) (*table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true

	type seen struct {
		line int
		e    entry
	}
	byHash := map[[sha256.Size]byte]seen{}
	var order [][sha256.Size]byte
	var warnings []string
	maxLen := 0
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			// csv.ParseError names the line and column and never the
			// field's content.
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) < 3 {
			return nil, fmt.Errorf("%s: line %d: %w, found %d", source, line, ErrTooFewColumns, len(rec))
		}
		if rec[0] == "" {
			warnings = append(warnings, fmt.Sprintf("%s: line %d: empty token, record skipped", source, line))
			continue
		}
		e := entry{hash: hashToken(rec[0])}
		e.resp = authn.Response{
			User:          authn.User{Name: strings.Clone(rec[1]), UID: strings.Clone(rec[2])},
			Authenticator: Name,
		}
		if len(rec) >= 4 {
			// An empty fourth column gives one empty group, as
			// strings.Split does in kube-apiserver.
			g := strings.Split(rec[3], ",")
			for i := range g {
				g[i] = strings.Clone(g[i])
			}
			e.resp.User.Groups = g[:len(g):len(g)]
		}
		// The chain adds system:authenticated to the groups of most
		// users; the shared response carries it already where it
		// belongs, so the chain copies nothing per request.
		e.resp.User.Groups = authn.AddAuthenticated(e.resp.User.Name, e.resp.User.Groups)
		maxLen = max(maxLen, len(rec[0]))
		if prev, ok := byHash[e.hash]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: line %d: duplicate token (also on line %d), the last one wins", source, line, prev.line))
		} else {
			order = append(order, e.hash)
		}
		byHash[e.hash] = seen{line: line, e: e}
	}

	t := &table{byPrefix: make(map[uint64][]entry, len(byHash)), n: len(byHash), maxLen: maxLen, warnings: warnings}
	for _, h := range order {
		k := binary.LittleEndian.Uint64(h[:8])
		t.byPrefix[k] = append(t.byPrefix[k], byHash[h].e)
	}
	return t, nil
}
