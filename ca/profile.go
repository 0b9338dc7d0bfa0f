package ca

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cloudflare/cfssl/config"
)

// Defaults for every certificate kubegate issues.
const (
	// DefaultValidity is one year for leaves, kubeadm's default: short
	// enough that a leaked client cert stops working, long enough that a
	// yearly upgrade (which renews) never lets one lapse.
	DefaultValidity = 365 * 24 * time.Hour
	// DefaultCAValidity is ten years for CAs, kubeadm's default: rotating a
	// CA means touching every kubeconfig and component, so it is rare.
	DefaultCAValidity = 10 * 365 * 24 * time.Hour
	// Backdate moves NotBefore into the past so that a node whose clock
	// is a few minutes behind still accepts a cert issued just now.
	Backdate = 5 * time.Minute
)

// Profile names.
const (
	ProfileClient = "client"
	ProfileServer = "server"
	ProfilePeer   = "peer"
)

// Profiles lists the profiles Issue and SignCSR accept.
var Profiles = []string{ProfileClient, ProfileServer, ProfilePeer}

// profiles are cfssl signing profiles. Key usage is digitalSignature
// only: TLS 1.3 and ECDHE suites only ever sign with the leaf key, and
// kubegate never offers RSA key transport, so keyEncipherment is unneeded.
var profiles = map[string]*config.SigningProfile{
	// client: TLS client authentication only, so a stolen client cert
	// cannot impersonate a server.
	ProfileClient: {
		Usage:  []string{"digital signature", "client auth"},
		Expiry: DefaultValidity,
	},
	// server: TLS server authentication only; SANs are required because
	// clients match the host name against SANs, never the CN.
	ProfileServer: {
		Usage:  []string{"digital signature", "server auth"},
		Expiry: DefaultValidity,
	},
	// peer: both, for members that dial each other (etcd peers, etcd
	// server certs also used as clients).
	ProfilePeer: {
		Usage:  []string{"digital signature", "server auth", "client auth"},
		Expiry: DefaultValidity,
	},
}

// needsSANs reports whether the profile issues server certificates.
func needsSANs(name string) bool { return name == ProfileServer || name == ProfilePeer }

// lookupProfile returns the named profile. Unlike cfssl, which falls back
// to its default profile, an unknown name is an error.
func lookupProfile(name string) (*config.SigningProfile, error) {
	if p, ok := profiles[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("%w %q (want client, server or peer)", ErrUnknownProfile, name)
}

// ParseDuration accepts Go durations ("8760h") and whole days ("365d").
func ParseDuration(s string) (time.Duration, error) {
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("invalid duration %q (want for example 365d or 8760h)", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("invalid duration %q (want for example 365d or 8760h)", s)
	}
	return v, nil
}
