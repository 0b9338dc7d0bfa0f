package kubeconfig

import (
	"fmt"
	"path/filepath"
	"sort"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubegate/kubegate/ca"
)

// EmbeddedCerts lists the client certificates embedded in the kubeconfig
// at path, one per user with client-certificate-data, by user name. rel
// is the name reported in each entry (usually the path relative to DIR).
func EmbeddedCerts(path, rel string) ([]ca.Embedded, error) {
	cfg, err := Load(path)
	if err != nil {
		return nil, err
	}
	return embedded(cfg, rel), nil
}

func embedded(cfg *clientcmdapi.Config, rel string) []ca.Embedded {
	var out []ca.Embedded
	for name, u := range cfg.AuthInfos {
		if len(u.ClientCertificateData) == 0 {
			continue
		}
		out = append(out, ca.Embedded{File: rel, User: name, CertPEM: u.ClientCertificateData, KeyPEM: u.ClientKeyData})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].User < out[j].User })
	return out
}

// ScanDir lists the embedded client certificates of every DIR/*.conf.
// A kubeconfig that cannot be loaded is an error naming it.
func ScanDir(dir string) ([]ca.Embedded, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.conf"))
	if err != nil {
		return nil, err
	}
	var out []ca.Embedded
	for _, p := range paths {
		e, err := EmbeddedCerts(p, filepath.Base(p))
		if err != nil {
			return nil, err
		}
		out = append(out, e...)
	}
	return out, nil
}

// ReplaceClientCert rewrites the kubeconfig at path so that user carries
// certPEM and keyPEM, keeping everything else. The user must exist.
func ReplaceClientCert(path, user string, certPEM, keyPEM []byte) error {
	cfg, err := Load(path)
	if err != nil {
		return err
	}
	u, ok := cfg.AuthInfos[user]
	if !ok {
		return fmt.Errorf("kubeconfig %s has no user %q", path, user)
	}
	u.ClientCertificateData = certPEM
	u.ClientKeyData = keyPEM
	return Write(path, cfg, true)
}

// WriteCredentials writes one kubeconfig per credential under dir, with
// the given cluster name and server. Every kubeconfig is built before
// the first is written, so a bad server URL writes nothing.
func WriteCredentials(dir, clusterName, server string, creds []ca.Credential) error {
	cfgs := make([]*clientcmdapi.Config, len(creds))
	for i, c := range creds {
		cfg, err := Build(Options{ClusterName: clusterName, Server: server, CAPEM: c.CAPEM,
			UserName: c.User, CertPEM: c.CertPEM, KeyPEM: c.KeyPEM})
		if err != nil {
			return err
		}
		cfgs[i] = cfg
	}
	for i, c := range creds {
		if err := Write(filepath.Join(dir, c.Kubeconfig), cfgs[i], c.Overwrite); err != nil {
			return err
		}
	}
	return nil
}

// Editor is the ca.KubeconfigEditor of kubeconfig files, used by CA
// rotation: it reads and replaces embedded CA data and client
// certificates and keeps every other field.
type Editor struct{}

var _ ca.KubeconfigEditor = Editor{}

// Certificates returns the certificate-authority-data of every cluster
// and the client-certificate-data of every user that embeds them.
func (Editor) Certificates(data []byte) (clusters, users map[string][]byte, err error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, nil, err
	}
	clusters, users = map[string][]byte{}, map[string][]byte{}
	for name, c := range cfg.Clusters {
		if len(c.CertificateAuthorityData) > 0 {
			clusters[name] = c.CertificateAuthorityData
		}
	}
	for name, u := range cfg.AuthInfos {
		if len(u.ClientCertificateData) > 0 {
			users[name] = u.ClientCertificateData
		}
	}
	return clusters, users, nil
}

// Edit replaces the named clusters' certificate-authority-data and the
// named users' client-certificate-data.
func (Editor) Edit(data []byte, clusters, users map[string][]byte) ([]byte, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, err
	}
	for name, caPEM := range clusters {
		c, ok := cfg.Clusters[name]
		if !ok {
			return nil, fmt.Errorf("no cluster %q", name)
		}
		c.CertificateAuthorityData = caPEM
	}
	for name, certPEM := range users {
		u, ok := cfg.AuthInfos[name]
		if !ok {
			return nil, fmt.Errorf("no user %q", name)
		}
		u.ClientCertificateData = certPEM
	}
	return clientcmd.Write(*cfg)
}

// CertificateFiles returns the client-certificate path of every user
// that names one, as written.
func (Editor) CertificateFiles(data []byte) (map[string]string, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, err
	}
	users := map[string]string{}
	for name, u := range cfg.AuthInfos {
		if u.ClientCertificate != "" {
			users[name] = u.ClientCertificate
		}
	}
	return users, nil
}
