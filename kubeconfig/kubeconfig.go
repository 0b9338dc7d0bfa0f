// Package kubeconfig builds, writes and loads kubeconfig files in client-go's
// own format (k8s.io/client-go/tools/clientcmd), so that kubectl and every
// client-go program read them unchanged.
package kubeconfig

import (
	"fmt"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// Options describe a kubeconfig with one cluster, one user and one context.
type Options struct {
	ClusterName string // default "kubernetes"
	Server      string // https://host:port; required
	CAPEM       []byte // certificate-authority-data; nil: none embedded
	UserName    string // the user entry's name; required
	ContextName string // default UserName@ClusterName, as kubeadm names it
	CertPEM     []byte // client-certificate-data; nil with a token user
	KeyPEM      []byte // client-key-data; nil with a token user
	Token       string // bearer token; empty with a certificate user
}

// Build returns the kubeconfig described by o. It is the current context.
func Build(o Options) (*clientcmdapi.Config, error) {
	if o.Server == "" {
		return nil, fmt.Errorf("kubeconfig for %q: server URL is empty", o.UserName)
	}
	if o.UserName == "" {
		return nil, fmt.Errorf("kubeconfig: user name is empty")
	}
	if o.ClusterName == "" {
		o.ClusterName = "kubernetes"
	}
	if o.ContextName == "" {
		o.ContextName = o.UserName + "@" + o.ClusterName
	}
	cfg := clientcmdapi.NewConfig()
	cluster := clientcmdapi.NewCluster()
	cluster.Server = o.Server
	cluster.CertificateAuthorityData = o.CAPEM
	cfg.Clusters[o.ClusterName] = cluster

	user := clientcmdapi.NewAuthInfo()
	user.ClientCertificateData = o.CertPEM
	user.ClientKeyData = o.KeyPEM
	user.Token = o.Token
	cfg.AuthInfos[o.UserName] = user

	ctx := clientcmdapi.NewContext()
	ctx.Cluster = o.ClusterName
	ctx.AuthInfo = o.UserName
	cfg.Contexts[o.ContextName] = ctx
	cfg.CurrentContext = o.ContextName
	return cfg, nil
}

// Write serializes cfg and writes it to path atomically with mode 0600 (it
// holds credentials). Without overwrite an existing file is an error.
func Write(path string, cfg *clientcmdapi.Config, overwrite bool) error {
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("encode kubeconfig %s: %w", path, err)
	}
	return fsutil.WriteFile(path, data, fsutil.ModeKey, overwrite)
}

// Load reads the kubeconfig at path.
func Load(path string) (*clientcmdapi.Config, error) {
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}
