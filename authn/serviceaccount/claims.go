package serviceaccount

import (
	"errors"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// Names kube-apiserver gives service-account identities and token claims.
const (
	// LegacyIssuer is the iss of legacy (Secret-based) tokens.
	LegacyIssuer = "kubernetes/serviceaccount"

	// UsernamePrefix starts every service-account user name.
	UsernamePrefix = "system:serviceaccount:"
	// AllServiceAccountsGroup holds every service account.
	AllServiceAccountsGroup = "system:serviceaccounts"
	// GroupPrefix followed by a namespace is the group of that
	// namespace's service accounts.
	GroupPrefix = "system:serviceaccounts:"

	// Extra keys set from a bound token's claims.
	PodNameKey  = "authentication.kubernetes.io/pod-name"
	PodUIDKey   = "authentication.kubernetes.io/pod-uid"
	NodeNameKey = "authentication.kubernetes.io/node-name"
	NodeUIDKey  = "authentication.kubernetes.io/node-uid"
)

// Username returns the user name of service account name in namespace.
func Username(namespace, name string) string {
	return UsernamePrefix + namespace + ":" + name
}

// SplitUsername returns the namespace and name of a service-account user
// name. The namespace must be a DNS label and the name a DNS subdomain.
func SplitUsername(username string) (namespace, name string, err error) {
	rest, ok := strings.CutPrefix(username, UsernamePrefix)
	if !ok {
		return "", "", errors.New("username is not a service account")
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || strings.Contains(name, ":") {
		return "", "", errors.New("username is not namespace:name")
	}
	if !isDNSLabel(namespace) {
		return "", "", errors.New("username has an invalid namespace")
	}
	if !isDNSSubdomain(name) {
		return "", "", errors.New("username has an invalid service account name")
	}
	return namespace, name, nil
}

// isDNSLabel reports whether s is an RFC 1123 label: at most 63 lower-case
// alphanumerics or '-', starting and ending with an alphanumeric.
func isDNSLabel(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case c == '-' && i > 0 && i < len(s)-1:
		default:
			return false
		}
	}
	return true
}

// isDNSSubdomain reports whether s is an RFC 1123 subdomain: dot-separated
// labels, at most 253 characters in all.
func isDNSSubdomain(s string) bool {
	if len(s) == 0 || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if !isDNSLabel(l) {
			return false
		}
	}
	return true
}

// claims is the payload of both kinds of token. Bound tokens use the
// registered claims and the "kubernetes.io" object; legacy tokens use iss,
// sub and the four flat "kubernetes.io/serviceaccount/..." claims.
type claims struct {
	jwt.RegisteredClaims
	Kubernetes *kubeClaims `json:"kubernetes.io,omitempty"`

	LegacyNamespace  string `json:"kubernetes.io/serviceaccount/namespace,omitempty"`
	LegacySecretName string `json:"kubernetes.io/serviceaccount/secret.name,omitempty"`
	LegacySAName     string `json:"kubernetes.io/serviceaccount/service-account.name,omitempty"`
	LegacySAUID      string `json:"kubernetes.io/serviceaccount/service-account.uid,omitempty"`
}

// kubeClaims is the private "kubernetes.io" claim of a bound token.
type kubeClaims struct {
	Namespace      string           `json:"namespace,omitempty"`
	ServiceAccount ref              `json:"serviceaccount,omitempty"`
	Pod            *ref             `json:"pod,omitempty"`
	Secret         *ref             `json:"secret,omitempty"`
	Node           *ref             `json:"node,omitempty"`
	WarnAfter      *jwt.NumericDate `json:"warnafter,omitempty"`
}

type ref struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}
