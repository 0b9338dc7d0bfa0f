package inspect

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubegate/kubegate/internal/pemutil"
)

type kubeconfigAPI = clientcmdapi.Config

// Kubeconfig describes every context, cluster and user of a kubeconfig,
// each list sorted by name.
type Kubeconfig struct {
	CurrentContext string         `json:"currentContext,omitempty"`
	Contexts       []*KubeContext `json:"contexts"`
	Clusters       []*KubeCluster `json:"clusters"`
	Users          []*KubeUser    `json:"users"`
}

// KubeContext is one context entry.
type KubeContext struct {
	Name      string   `json:"name"`
	Cluster   string   `json:"cluster"`
	User      string   `json:"user"`
	Namespace string   `json:"namespace,omitempty"`
	Problems  []string `json:"problems,omitempty"`
}

// KubeCluster is one cluster entry with its CA certificates.
type KubeCluster struct {
	Name                  string         `json:"name"`
	Server                string         `json:"server"`
	TLSServerName         string         `json:"tlsServerName,omitempty"`
	InsecureSkipTLSVerify bool           `json:"insecureSkipTLSVerify,omitempty"`
	CAFile                string         `json:"caFile,omitempty"`
	CA                    []*Certificate `json:"ca,omitempty"`
	Problems              []string       `json:"problems,omitempty"`

	roots []*x509.Certificate
}

// KubeUser is one user entry. Secrets are never reported: a token that is
// a JWT is decoded, any other token is reported by length only, and a
// private key by type and size.
type KubeUser struct {
	Name         string         `json:"name"`
	Credential   string         `json:"credential"` // what kind of credential the user carries
	CertFile     string         `json:"certFile,omitempty"`
	KeyFile      string         `json:"keyFile,omitempty"`
	Certificates []*Certificate `json:"certificates,omitempty"`
	Key          *Key           `json:"key,omitempty"`
	// KeyMatches says whether the private key belongs to the first
	// certificate; nil when there is no pair to compare.
	KeyMatches   *bool  `json:"keyMatchesCertificate,omitempty"`
	Token        *JWT   `json:"token,omitempty"`
	TokenLength  int    `json:"tokenLength,omitempty"` // opaque (non-JWT) tokens only
	TokenFile    string `json:"tokenFile,omitempty"`
	Exec         string `json:"exec,omitempty"`
	AuthProvider string `json:"authProvider,omitempty"`
	BasicAuth    string `json:"basicAuthUser,omitempty"`
	// Chains verify the client certificate against the CA of every
	// cluster a context pairs the user with, or against Options.Roots.
	Chains   []*Verification `json:"chains,omitempty"`
	Problems []string        `json:"problems,omitempty"`
}

// ErrNoUsers is returned for a kubeconfig without a single user.
var ErrNoUsers = errors.New("kubeconfig has no users")

func inspectKubeconfig(data []byte, opts *Options, now time.Time) (*Kubeconfig, error) {
	cfg, err := loadKubeconfig(data)
	if err != nil {
		return nil, err
	}
	if len(cfg.AuthInfos) == 0 {
		return nil, ErrNoUsers
	}
	k := &Kubeconfig{CurrentContext: cfg.CurrentContext}
	if k.CurrentContext != "" && cfg.Contexts[k.CurrentContext] == nil {
		k.CurrentContext += " (no such context)"
	}
	clusters := map[string]*KubeCluster{}
	for _, name := range sortedKeys(cfg.Clusters) {
		c := describeCluster(name, cfg.Clusters[name], opts, now)
		clusters[name] = c
		k.Clusters = append(k.Clusters, c)
	}
	for _, name := range sortedKeys(cfg.Contexts) {
		c := cfg.Contexts[name]
		if c == nil {
			continue
		}
		kc := &KubeContext{Name: name, Cluster: c.Cluster, User: c.AuthInfo, Namespace: c.Namespace}
		if clusters[c.Cluster] == nil {
			kc.Problems = append(kc.Problems, fmt.Sprintf("cluster %q does not exist", c.Cluster))
		}
		if cfg.AuthInfos[c.AuthInfo] == nil {
			kc.Problems = append(kc.Problems, fmt.Sprintf("user %q does not exist", c.AuthInfo))
		}
		k.Contexts = append(k.Contexts, kc)
	}
	for _, name := range sortedKeys(cfg.AuthInfos) {
		if cfg.AuthInfos[name] == nil {
			continue
		}
		u := describeUser(name, cfg.AuthInfos[name], opts, now)
		if len(u.Certificates) > 0 {
			leafs := make([]*x509.Certificate, len(u.Certificates))
			for i, c := range u.Certificates {
				leafs[i] = c.cert
			}
			u.Chains = userChains(name, leafs, k.Contexts, clusters, opts, now)
		}
		k.Users = append(k.Users, u)
	}
	return k, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// readRef reads a file a kubeconfig refers to, relative to opts.BaseDir.
func readRef(path string, opts *Options) ([]byte, error) {
	if opts.BaseDir == "" {
		return nil, fmt.Errorf("file %s not read: the kubeconfig came without a directory to resolve it in", path)
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(opts.BaseDir, path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, errors.Unwrap(err))
	}
	return b, nil
}

func describeCluster(name string, c *clientcmdapi.Cluster, opts *Options, now time.Time) *KubeCluster {
	kc := &KubeCluster{Name: name}
	if c == nil {
		return kc
	}
	kc.Server, kc.TLSServerName, kc.InsecureSkipTLSVerify, kc.CAFile = c.Server, c.TLSServerName, c.InsecureSkipTLSVerify, c.CertificateAuthority
	if kc.InsecureSkipTLSVerify {
		kc.Problems = append(kc.Problems, "insecure-skip-tls-verify: the server's certificate is not checked")
	}
	data := c.CertificateAuthorityData
	if len(data) == 0 && c.CertificateAuthority != "" {
		var err error
		if data, err = readRef(c.CertificateAuthority, opts); err != nil {
			kc.Problems = append(kc.Problems, "certificate-authority: "+err.Error())
			return kc
		}
	}
	if len(data) == 0 {
		if !kc.InsecureSkipTLSVerify {
			kc.Problems = append(kc.Problems, "no certificate-authority: the server must present a certificate the system roots trust")
		}
		return kc
	}
	roots, err := ParseCAs(data)
	if err != nil {
		kc.Problems = append(kc.Problems, "certificate-authority-data: "+err.Error())
		return kc
	}
	kc.roots = roots
	for _, r := range roots {
		kc.CA = append(kc.CA, describeCert(r, now))
	}
	return kc
}

func describeUser(name string, a *clientcmdapi.AuthInfo, opts *Options, now time.Time) *KubeUser {
	u := &KubeUser{Name: name, CertFile: a.ClientCertificate, KeyFile: a.ClientKey, TokenFile: a.TokenFile}
	var creds []string
	certPEM, keyPEM := a.ClientCertificateData, a.ClientKeyData
	if len(certPEM) > 0 || a.ClientCertificate != "" {
		creds = append(creds, "client certificate")
		var err error
		if len(certPEM) == 0 {
			if certPEM, err = readRef(a.ClientCertificate, opts); err != nil {
				u.Problems = append(u.Problems, "client-certificate: "+err.Error())
			}
		}
		if len(keyPEM) == 0 && a.ClientKey != "" {
			if keyPEM, err = readRef(a.ClientKey, opts); err != nil {
				u.Problems = append(u.Problems, "client-key: "+err.Error())
			}
		}
		u.describeCertAndKey(certPEM, keyPEM, now)
	}
	switch {
	case a.Token != "":
		creds = append(creds, "token")
		u.TokenLength = len(a.Token)
		if _, err, isJWT := sniffJWT([]byte(a.Token)); isJWT && err == nil {
			if j, err := inspectJWT(a.Token, opts, now); err != nil {
				u.Problems = append(u.Problems, "token looks like a JWT but cannot be decoded: "+err.Error())
			} else {
				u.Token, u.TokenLength = j, 0
			}
		}
	case a.TokenFile != "":
		creds = append(creds, "token file")
	}
	if a.Exec != nil {
		creds = append(creds, "exec plugin")
		u.Exec = strings.Join(append([]string{a.Exec.Command}, a.Exec.Args...), " ")
	}
	if a.AuthProvider != nil {
		creds = append(creds, "auth provider")
		u.AuthProvider = a.AuthProvider.Name
	}
	if a.Username != "" || a.Password != "" {
		creds = append(creds, "basic auth")
		u.BasicAuth = a.Username
	}
	if len(creds) == 0 {
		creds = []string{"none (anonymous)"}
	}
	u.Credential = strings.Join(creds, ", ")
	return u
}

func (u *KubeUser) describeCertAndKey(certPEM, keyPEM []byte, now time.Time) {
	if len(certPEM) > 0 {
		certs, err := ParseCAs(certPEM)
		if err != nil {
			u.Problems = append(u.Problems, "client-certificate-data: "+err.Error())
		}
		for _, c := range certs {
			u.Certificates = append(u.Certificates, describeCert(c, now))
		}
	}
	if len(keyPEM) == 0 {
		u.Problems = append(u.Problems, "no client key: the certificate cannot be used")
		return
	}
	block := pemutil.First(keyPEM)
	if block == nil || pemKinds[block.Type] != KindPrivateKey {
		u.Problems = append(u.Problems, "client-key-data: no PEM private key found")
		return
	}
	key, err := describeKeyBlock(block)
	if err != nil {
		u.Problems = append(u.Problems, "client-key-data: "+err.Error())
		return
	}
	u.Key = key
	if len(u.Certificates) > 0 && !key.Encrypted {
		pub, ok := u.Certificates[0].cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
		match := ok && pub.Equal(key.public)
		u.KeyMatches = &match
		if !match {
			u.Problems = append(u.Problems, "the client key does not belong to the client certificate")
		}
	}
}

// userChains verifies a user's certificates, as kube-apiserver would (with
// the client-auth usage), against opts.Roots or else against each cluster
// a context pairs the user with.
func userChains(user string, certs []*x509.Certificate, contexts []*KubeContext, clusters map[string]*KubeCluster, opts *Options, now time.Time) []*Verification {
	if opts.Roots != nil {
		return []*Verification{verifyChain(certs, opts.Roots, opts.RootsName, now, x509.ExtKeyUsageClientAuth)}
	}
	var out []*Verification
	seen := map[string]bool{}
	for _, c := range contexts {
		cl := clusters[c.Cluster]
		if c.User != user || cl == nil || seen[c.Cluster] || cl.roots == nil {
			continue
		}
		seen[c.Cluster] = true
		out = append(out, verifyChain(certs, cl.roots, fmt.Sprintf("CA of cluster %q", c.Cluster), now, x509.ExtKeyUsageClientAuth))
	}
	return out
}
