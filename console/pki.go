package console

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/util/keyutil"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/kubeconfig"
)

// PKI is the PKI view's model of a cluster directory: what `kubegate
// cert expiry --dir DIR` lists (ca.ScanCertificates, the same files with
// the same dates), with each certificate's identity as Kubernetes reads
// it, the service-account public keys, the kubeconfigs and the rotation
// in progress. It holds no private key, no token and no key's bytes.
type PKI struct {
	Configured         bool                `json:"configured"`
	Dir                string              `json:"dir,omitempty"`
	Rotation           *Rotation           `json:"rotation"`
	Authorities        []Authority         `json:"authorities"`
	Certificates       []Certificate       `json:"certificates"`
	ServiceAccountKeys []ServiceAccountKey `json:"serviceAccountKeys"`
	Kubeconfigs        []Kubeconfig        `json:"kubeconfigs"`
}

// Rotation is where a CA rotation stands (ca.RotationState).
type Rotation struct {
	// Phase is the last phase done ("trust-both", "reissue",
	// "drop-old"), or "trust-both-started" when trust-both has not
	// finished.
	Phase      string    `json:"phase"`
	InProgress bool      `json:"inProgress"`
	Next       string    `json:"next,omitempty"`
	CAs        []string  `json:"cas"`
	Updated    time.Time `json:"updated"`
}

// Authority is one CA certificate of the tree.
type Authority struct {
	// Name is "cluster", "front-proxy" or "etcd" for kubeadm's CAs,
	// with " (new)" for one a rotation has not yet put in place; else
	// the file.
	Name string `json:"name"`
	File string `json:"file"`
}

// Certificate is one certificate of the tree, a file under DIR/pki or a
// kubeconfig's client certificate.
type Certificate struct {
	// File is the path relative to DIR: the .crt, or the kubeconfig.
	File string `json:"file"`
	// KubeconfigUser is the kubeconfig's users[] entry; "" for a file.
	KubeconfigUser string `json:"kubeconfigUser,omitempty"`
	// Authority names the CA tree the certificate belongs to (see
	// Authority.Name): its issuer's, or its own for a root; "unknown"
	// when no CA of the tree signed it.
	Authority string `json:"authority"`
	IsCA      bool   `json:"isCA"`
	Subject   string `json:"subject"`
	// User and Groups are what kube-apiserver reads from the
	// certificate as a client certificate: CN and O.
	User        string    `json:"user"`
	Groups      []string  `json:"groups"`
	Issuer      string    `json:"issuer"`
	Serial      string    `json:"serial"`
	DNSNames    []string  `json:"dnsNames"`
	IPAddresses []string  `json:"ipAddresses"`
	URIs        []string  `json:"uris"`
	Usages      []string  `json:"usages"`
	KeyType     string    `json:"keyType"`
	NotBefore   time.Time `json:"notBefore"`
	NotAfter    time.Time `json:"notAfter"`
	// ExpiresInSeconds is negative once expired.
	ExpiresInSeconds int64 `json:"expiresInSeconds"`
	// Bundle is the certificate's position in its file: the first, as
	// cert expiry reads it.
	Bundle int `json:"bundle"`
}

// ServiceAccountKey is a service-account public key file.
type ServiceAccountKey struct {
	File    string `json:"file"`
	KeyType string `json:"keyType"`
}

// Kubeconfig is one DIR/*.conf and the identity of its current context.
type Kubeconfig struct {
	File    string `json:"file"`
	Context string `json:"context"`
	Cluster string `json:"cluster"`
	Server  string `json:"server"`
	// User and Groups come from the client certificate; User is the
	// users[] entry's name for other credentials.
	User   string   `json:"user"`
	Groups []string `json:"groups"`
	// Credential is "client-certificate", "token", "exec" or "none".
	Credential string     `json:"credential"`
	NotAfter   *time.Time `json:"notAfter"`
}

// LoadPKI reads the PKI view of dir at now. An empty dir is an
// unconfigured view.
func LoadPKI(dir string, now time.Time) (*PKI, error) {
	if dir == "" {
		return &PKI{}, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	p := &PKI{Configured: true, Dir: abs, Authorities: []Authority{}, Certificates: []Certificate{},
		ServiceAccountKeys: []ServiceAccountKey{}, Kubeconfigs: []Kubeconfig{}}
	// A kubeconfig's parse error may quote the file, and the file holds
	// keys and tokens: the error names the file only.
	confs, err := filepath.Glob(filepath.Join(dir, "*.conf"))
	if err != nil {
		return nil, err
	}
	for _, p := range confs {
		if _, err := kubeconfig.Load(p); err != nil {
			return nil, fmt.Errorf("%s is not a kubeconfig that can be read", filepath.Base(p))
		}
	}
	emb, err := kubeconfig.ScanDir(dir)
	if err != nil {
		return nil, errors.New("the kubeconfigs' client certificates could not be read")
	}
	for i := range emb {
		emb[i].KeyPEM = nil // never parsed, never kept
	}
	found, err := ca.ScanCertificates(dir, emb)
	if err != nil {
		return nil, err
	}
	for _, f := range found {
		if f.Kind == ca.KindCA {
			p.Authorities = append(p.Authorities, Authority{Name: authorityName(f.Name), File: f.Name})
		}
		p.Certificates = append(p.Certificates, certificate(f, now))
	}
	if p.Rotation, err = rotation(dir); err != nil {
		return nil, err
	}
	if p.ServiceAccountKeys, err = serviceAccountKeys(dir); err != nil {
		return nil, err
	}
	if p.Kubeconfigs, err = kubeconfigs(dir, found); err != nil {
		return nil, err
	}
	return p, nil
}

// kubeadmAuthorities name kubeadm's CAs by file.
var kubeadmAuthorities = map[string]string{
	"pki/ca.crt":             "cluster",
	"pki/front-proxy-ca.crt": "front-proxy",
	"pki/etcd/ca.crt":        "etcd",
}

// authorityName names the CA in file (relative to DIR, with slashes).
func authorityName(file string) string {
	if n, ok := kubeadmAuthorities[file]; ok {
		return n
	}
	if rest, ok := strings.CutPrefix(file, ca.RotationDir+"/"); ok {
		if n, ok := kubeadmAuthorities[ca.PKIDir+"/"+rest]; ok {
			return n + " (new)"
		}
	}
	return file
}

func certificate(f *ca.Found, now time.Time) Certificate {
	c := f.Cert
	file := f.Path
	auth := "unknown"
	switch {
	case f.Kind == ca.KindCA && f.Issuer == "-":
		auth = authorityName(f.Name)
	case f.Issuer != "-" && f.Issuer != "unknown":
		auth = authorityName(f.Issuer)
	}
	out := Certificate{
		File: file, KubeconfigUser: f.User, Authority: auth, IsCA: c.IsCA,
		Subject: ca.SubjectString(c.RawSubject), User: c.Subject.CommonName, Groups: nonNil(c.Subject.Organization),
		Issuer: ca.SubjectString(c.RawIssuer), Serial: ca.SerialHex(c),
		DNSNames: nonNil(c.DNSNames), IPAddresses: []string{}, URIs: []string{}, Usages: usages(c),
		KeyType: keyType(c.PublicKey), NotBefore: c.NotBefore.UTC(), NotAfter: c.NotAfter.UTC(),
		ExpiresInSeconds: int64(c.NotAfter.Sub(now) / time.Second),
	}
	for _, ip := range c.IPAddresses {
		out.IPAddresses = append(out.IPAddresses, ip.String())
	}
	for _, u := range c.URIs {
		out.URIs = append(out.URIs, u.String())
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// usages names the extended key usages as kube's certificates API does,
// and the key usages a CA needs.
func usages(c *x509.Certificate) []string {
	out := []string{}
	if c.KeyUsage&x509.KeyUsageCertSign != 0 {
		out = append(out, "cert sign")
	}
	if c.KeyUsage&x509.KeyUsageDigitalSignature != 0 {
		out = append(out, "digital signature")
	}
	if c.KeyUsage&x509.KeyUsageKeyEncipherment != 0 {
		out = append(out, "key encipherment")
	}
	for _, u := range c.ExtKeyUsage {
		switch u {
		case x509.ExtKeyUsageServerAuth:
			out = append(out, "server auth")
		case x509.ExtKeyUsageClientAuth:
			out = append(out, "client auth")
		case x509.ExtKeyUsageAny:
			out = append(out, "any")
		default:
			out = append(out, fmt.Sprintf("extended usage %d", u))
		}
	}
	return out
}

// keyType describes a public key: "RSA 2048", "ECDSA P-256", "Ed25519".
func keyType(pub crypto.PublicKey) string {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return fmt.Sprintf("RSA %d", k.N.BitLen())
	case *ecdsa.PublicKey:
		return "ECDSA " + k.Curve.Params().Name
	case ed25519.PublicKey:
		return "Ed25519"
	}
	return fmt.Sprintf("%T", pub)
}

func rotation(dir string) (*Rotation, error) {
	st, err := ca.ReadRotationState(dir)
	if err != nil || st == nil {
		return nil, err
	}
	r := &Rotation{Phase: string(st.Done), InProgress: st.InProgress(), CAs: st.CAs, Updated: st.Updated}
	if r.Phase == "" {
		r.Phase = "trust-both-started"
	}
	if r.InProgress {
		r.Next = string(st.Next())
	}
	return r, nil
}

// serviceAccountKeys lists the public keys DIR/pki/*.pub, and those of a
// rotation under way.
func serviceAccountKeys(dir string) ([]ServiceAccountKey, error) {
	out := []ServiceAccountKey{}
	for _, pattern := range []string{ca.PKIDir + "/*.pub", ca.RotationDir + "/*.pub"} {
		paths, err := filepath.Glob(filepath.Join(dir, filepath.FromSlash(pattern)))
		if err != nil {
			return nil, err
		}
		sort.Strings(paths)
		for _, p := range paths {
			rel, _ := filepath.Rel(dir, p)
			k := ServiceAccountKey{File: filepath.ToSlash(rel), KeyType: "unreadable"}
			if keys, err := keyutil.PublicKeysFromFile(p); err == nil && len(keys) > 0 {
				k.KeyType = keyType(keys[0])
			}
			out = append(out, k)
		}
	}
	return out, nil
}

// kubeconfigs describes each DIR/*.conf by its current context; found
// holds the kubeconfigs' client certificates, already scanned.
func kubeconfigs(dir string, found []*ca.Found) ([]Kubeconfig, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.conf"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	out := []Kubeconfig{}
	for _, p := range paths {
		cfg, err := kubeconfig.Load(p)
		if err != nil {
			return nil, fmt.Errorf("%s is not a kubeconfig that can be read", filepath.Base(p))
		}
		k := Kubeconfig{File: filepath.Base(p), Context: cfg.CurrentContext, Groups: []string{}, Credential: "none"}
		ctx := cfg.Contexts[cfg.CurrentContext]
		if ctx == nil {
			out = append(out, k)
			continue
		}
		k.Cluster, k.User = ctx.Cluster, ctx.AuthInfo
		if cl := cfg.Clusters[ctx.Cluster]; cl != nil {
			k.Server = cl.Server
		}
		ai := cfg.AuthInfos[ctx.AuthInfo]
		switch {
		case ai == nil:
		case len(ai.ClientCertificateData) > 0 || ai.ClientCertificate != "":
			k.Credential = "client-certificate"
			if c := clientCert(dir, k.File, ctx.AuthInfo, ai.ClientCertificate, found); c != nil {
				k.User, k.Groups = c.Subject.CommonName, nonNil(c.Subject.Organization)
				na := c.NotAfter.UTC()
				k.NotAfter = &na
			}
		case ai.Token != "" || ai.TokenFile != "":
			k.Credential = "token"
		case ai.Exec != nil:
			k.Credential = "exec"
		}
		out = append(out, k)
	}
	return out, nil
}

// clientCert finds the client certificate of the users[] entry user of
// the kubeconfig file: embedded (among found), or in certFile, read
// relative to DIR.
func clientCert(dir, file, user, certFile string, found []*ca.Found) *x509.Certificate {
	for _, f := range found {
		if f.Kind == ca.KindKubeconfig && f.Path == file && f.User == user {
			return f.Cert
		}
	}
	if certFile == "" {
		return nil
	}
	if !filepath.IsAbs(certFile) {
		certFile = filepath.Join(dir, certFile)
	}
	data, err := os.ReadFile(certFile)
	if err != nil {
		return nil
	}
	c, err := ca.ParseCertPEM(certFile, data)
	if err != nil {
		return nil
	}
	return c
}

func (c *Console) servePKI(w http.ResponseWriter, r *http.Request, id Identity) string {
	if ok, reason := c.allowed(r, id, PKIViewPath); !ok {
		return forbid(w, id, PKIViewPath, reason)
	}
	p, err := LoadPKI(c.cfg.PKIDir, c.cfg.Now())
	if err != nil {
		c.cfg.Logger.Error("console PKI view", "dir", c.cfg.PKIDir, "error", err)
		writeStatus(w, http.StatusInternalServerError, "InternalError", "the PKI directory could not be read: "+pkiError(err))
		return ""
	}
	writeJSON(w, p)
	return ""
}

// pkiError says what went wrong reading the tree, without the contents
// of any file.
func pkiError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + " " + path.Base(filepath.ToSlash(pe.Path)) + ": " + pe.Err.Error()
	}
	return err.Error()
}
