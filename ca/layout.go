package ca

import (
	"bytes"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kubegate/kubegate/internal/fsutil"
)

// Names of the three CAs in the tree.
const (
	ClusterCA    = "ca"
	FrontProxyCA = "front-proxy-ca"
	EtcdCA       = "etcd/ca"
)

// PKIDir is the sub-directory of DIR that holds certificates and keys.
const PKIDir = "pki"

// Spec describes the cluster PKI that Init builds. The zero value of each
// field means its default (see Default).
type Spec struct {
	ClusterDomain string        // default "cluster.local"
	ServiceCIDR   string        // default "10.96.0.0/12"; its first IP is an apiserver SAN
	APIServerSANs []string      // extra apiserver SANs (DNS names or IPs)
	Nodes         []string      // one kubelet kubeconfig per node
	KeyAlgorithm  KeyAlgorithm  // default ECDSAP256
	Validity      time.Duration // leaf lifetime; default DefaultValidity
	CAValidity    time.Duration // CA lifetime; default DefaultCAValidity
}

// Default fills in every zero field.
func (s *Spec) Default() {
	if s.ClusterDomain == "" {
		s.ClusterDomain = "cluster.local"
	}
	if s.ServiceCIDR == "" {
		s.ServiceCIDR = "10.96.0.0/12"
	}
	if s.KeyAlgorithm == "" {
		s.KeyAlgorithm = ECDSAP256
	}
	if s.Validity == 0 {
		s.Validity = DefaultValidity
	}
	if s.CAValidity == 0 {
		s.CAValidity = DefaultCAValidity
	}
}

// Validate checks a defaulted spec, naming the field at fault.
func (s *Spec) Validate() error {
	if !validDNSName(s.ClusterDomain) {
		return fmt.Errorf("cluster domain %q is not a DNS name", s.ClusterDomain)
	}
	if _, err := ServiceIP(s.ServiceCIDR); err != nil {
		return err
	}
	if _, _, err := SplitHosts(s.APIServerSANs); err != nil {
		return fmt.Errorf("apiserver SAN: %w", err)
	}
	seen := map[string]bool{}
	for _, n := range s.Nodes {
		if err := ValidateName("node name", n); err != nil {
			return err
		}
		if !validDNSName(n) || strings.ToLower(n) != n || strings.Contains(n, "*") {
			return fmt.Errorf("node name %q is not a lowercase DNS name", n)
		}
		if seen[n] {
			return fmt.Errorf("node name %q is given twice", n)
		}
		seen[n] = true
	}
	if _, err := ParseKeyAlgorithm(string(s.KeyAlgorithm)); err != nil {
		return err
	}
	if s.Validity <= 0 {
		return fmt.Errorf("validity %s must be positive", s.Validity)
	}
	if s.CAValidity <= 0 {
		return fmt.Errorf("CA validity %s must be positive", s.CAValidity)
	}
	if s.Validity > s.CAValidity {
		return fmt.Errorf("validity %s is longer than the CA validity %s", s.Validity, s.CAValidity)
	}
	return nil
}

// ServiceIP returns the first address of cidr: the in-cluster IP of the
// "kubernetes" Service.
func ServiceIP(cidr string) (net.IP, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, fmt.Errorf("service CIDR %q is not a CIDR", cidr)
	}
	ip := new(big.Int).SetBytes(n.IP)
	ip.Add(ip, big.NewInt(1))
	b := ip.FillBytes(make([]byte, len(n.IP)))
	if !n.Contains(b) {
		return nil, fmt.Errorf("service CIDR %q has no room for a service IP", cidr)
	}
	return net.IP(b), nil
}

// Kind says what an Item is.
type Kind string

// Item kinds.
const (
	KindCA             Kind = "ca"
	KindLeaf           Kind = "cert"
	KindServiceAccount Kind = "sa"
	KindKubeconfig     Kind = "kubeconfig"
)

// Item is one entry of the tree: a CA, a leaf, the service-account key
// pair, or a kubeconfig with an embedded client cert.
type Item struct {
	Name    string // "ca", "apiserver", "etcd/server", "sa", or "admin.conf"
	Kind    Kind
	CA      string // issuing CA for leaves and kubeconfigs
	CN      string
	Orgs    []string
	Profile string
	Hosts   []string
	Note    string // what it is for, shown by plan
}

// Paths returns the item's files relative to DIR.
func (it Item) Paths() []string {
	switch it.Kind {
	case KindKubeconfig:
		return []string{it.Name}
	case KindServiceAccount:
		return []string{filepath.Join(PKIDir, "sa.key"), filepath.Join(PKIDir, "sa.pub")}
	default:
		base := filepath.Join(PKIDir, filepath.FromSlash(it.Name))
		return []string{base + ".crt", base + ".key"}
	}
}

// User is the kubeconfig user entry name for a kubeconfig item.
func (it Item) User() string { return it.CN }

// Items lists the tree for a defaulted, valid spec, CAs first.
func (s *Spec) Items() []Item {
	svcIP, _ := ServiceIP(s.ServiceCIDR)
	apiHosts := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc." + s.ClusterDomain, "localhost", "127.0.0.1", svcIP.String()}
	for _, h := range s.APIServerSANs {
		if !slices.Contains(apiHosts, h) {
			apiHosts = append(apiHosts, h)
		}
	}
	// etcd listens on loopback in the single-node layout.
	etcdHosts := []string{"localhost", "127.0.0.1", "::1"}
	items := []Item{
		{Name: ClusterCA, Kind: KindCA, CN: "kubernetes", Note: "cluster CA: client and serving CA"},
		{Name: FrontProxyCA, Kind: KindCA, CN: "front-proxy-ca", Note: "request-header CA, never the client CA"},
		{Name: EtcdCA, Kind: KindCA, CN: "etcd-ca", Note: "etcd CA"},
		{Name: "apiserver", Kind: KindLeaf, CA: ClusterCA, CN: "kube-apiserver", Profile: ProfileServer, Hosts: apiHosts, Note: "apiserver serving cert"},
		{Name: "apiserver-kubelet-client", Kind: KindLeaf, CA: ClusterCA, CN: "kube-apiserver-kubelet-client", Orgs: []string{"kubeadm:cluster-admins"}, Profile: ProfileClient, Note: "apiserver to kubelet"},
		{Name: "front-proxy-client", Kind: KindLeaf, CA: FrontProxyCA, CN: "front-proxy-client", Profile: ProfileClient, Note: "gateway to apiserver"},
		{Name: "etcd/server", Kind: KindLeaf, CA: EtcdCA, CN: "kube-etcd", Profile: ProfilePeer, Hosts: etcdHosts, Note: "etcd serving cert"},
		{Name: "etcd/peer", Kind: KindLeaf, CA: EtcdCA, CN: "kube-etcd-peer", Profile: ProfilePeer, Hosts: etcdHosts, Note: "etcd peer cert"},
		{Name: "etcd/healthcheck-client", Kind: KindLeaf, CA: EtcdCA, CN: "kube-etcd-healthcheck-client", Profile: ProfileClient, Note: "etcd health checks"},
		{Name: "apiserver-etcd-client", Kind: KindLeaf, CA: EtcdCA, CN: "kube-apiserver-etcd-client", Profile: ProfileClient, Note: "apiserver to etcd"},
		{Name: "sa", Kind: KindServiceAccount, Note: "service-account signing key pair"},
		{Name: "admin.conf", Kind: KindKubeconfig, CA: ClusterCA, CN: "kubernetes-admin", Orgs: []string{"kubeadm:cluster-admins"}, Profile: ProfileClient, Note: "cluster admin"},
		{Name: "super-admin.conf", Kind: KindKubeconfig, CA: ClusterCA, CN: "kubernetes-super-admin", Orgs: []string{"system:masters"}, Profile: ProfileClient, Note: "break-glass, bypasses RBAC"},
		{Name: "controller-manager.conf", Kind: KindKubeconfig, CA: ClusterCA, CN: "system:kube-controller-manager", Profile: ProfileClient, Note: "controller manager"},
		{Name: "scheduler.conf", Kind: KindKubeconfig, CA: ClusterCA, CN: "system:kube-scheduler", Profile: ProfileClient, Note: "scheduler"},
	}
	for _, n := range s.Nodes {
		items = append(items, Item{Name: "kubelet-" + n + ".conf", Kind: KindKubeconfig, CA: ClusterCA,
			CN: "system:node:" + n, Orgs: []string{"system:nodes"}, Profile: ProfileClient, Note: "kubelet on " + n})
	}
	return items
}

// Action is what Init does with an item.
type Action string

// Plan actions.
const (
	Create   Action = "create"
	Keep     Action = "keep"
	Replace  Action = "replace"  // only with force
	Conflict Action = "conflict" // exists and differs; needs force
)

// Step is one planned action.
type Step struct {
	Item   Item
	Action Action
	Reason string // why, for replace and conflict
}

// Plan is what Init would do to a directory. Making one reads and checks
// every existing file but writes nothing.
type Plan struct {
	Dir   string
	Spec  Spec
	Steps []Step
	// Now is the clock used for issuing; nil means time.Now.
	Now func() time.Time

	cas map[string]*Authority // existing CAs that are kept
}

// NewPlan compares dir with spec. Without force, existing material is
// kept when it matches the spec and is a conflict when it does not; with
// force everything is replaced. A corrupt file, or a key that does not
// match its certificate, is an error naming the file.
func NewPlan(dir string, spec Spec, force bool) (*Plan, error) {
	spec.Default()
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	p := &Plan{Dir: dir, Spec: spec, cas: map[string]*Authority{}}
	// Every file of the tree is read and written through real
	// directories, pki/ and pki/etcd/.
	for _, it := range spec.Items() {
		for _, rel := range it.Paths() {
			if err := fsutil.NoLinkedDirs(dir, filepath.Dir(rel)); err != nil {
				return nil, err
			}
		}
	}
	fresh := map[string]bool{} // CAs created or replaced
	for _, it := range spec.Items() {
		st := Step{Item: it}
		present, err := presence(dir, it.Paths())
		if err != nil {
			return nil, err
		}
		switch {
		case present == 0:
			st.Action = Create
		case force:
			st.Action, st.Reason = Replace, "--force"
		case present < len(it.Paths()):
			st.Action, st.Reason = Conflict, "only some of its files exist"
		default:
			st.Action, st.Reason, err = p.compare(it, fresh)
			if err != nil {
				return nil, err
			}
		}
		if it.Kind == KindCA && st.Action != Keep {
			fresh[it.Name] = true
		}
		p.Steps = append(p.Steps, st)
	}
	return p, nil
}

// presence counts how many of paths exist under dir.
func presence(dir string, paths []string) (int, error) {
	n := 0
	for _, rel := range paths {
		_, err := os.Lstat(filepath.Join(dir, rel))
		switch {
		case err == nil:
			n++
		case errors.Is(err, fs.ErrNotExist):
		default:
			return 0, fmt.Errorf("stat %s: %w", filepath.Join(dir, rel), err)
		}
	}
	return n, nil
}

// compare decides keep or conflict for an item whose files all exist.
func (p *Plan) compare(it Item, fresh map[string]bool) (Action, string, error) {
	paths := it.Paths()
	switch it.Kind {
	case KindCA:
		a, err := LoadAuthority(it.Name, filepath.Join(p.Dir, paths[0]), filepath.Join(p.Dir, paths[1]))
		if err != nil {
			return "", "", err
		}
		p.cas[it.Name] = a
		return Keep, "", nil
	case KindServiceAccount:
		if err := checkKeyPair(filepath.Join(p.Dir, paths[0]), filepath.Join(p.Dir, paths[1])); err != nil {
			return "", "", err
		}
		return Keep, "", nil
	case KindKubeconfig:
		if fresh[it.CA] {
			return Conflict, fmt.Sprintf("%s is new, so the embedded cert would not verify", it.CA), nil
		}
		return Keep, "", nil
	}
	cert, err := loadLeaf(filepath.Join(p.Dir, paths[0]), filepath.Join(p.Dir, paths[1]))
	if err != nil {
		return "", "", err
	}
	if fresh[it.CA] {
		return Conflict, fmt.Sprintf("%s is new, so this cert would not verify", it.CA), nil
	}
	if ca := p.cas[it.CA]; cert.CheckSignatureFrom(ca.Cert) != nil {
		return Conflict, fmt.Sprintf("not issued by %s", it.CA), nil
	}
	if diff := identityDiff(cert, it); diff != "" {
		return Conflict, diff, nil
	}
	return Keep, "", nil
}

// loadLeaf reads a certificate and its key and checks they belong
// together.
func loadLeaf(certPath, keyPath string) (*x509.Certificate, error) {
	data, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	cert, err := ParseCertPEM(certPath, data)
	if err != nil {
		return nil, err
	}
	data, err = os.ReadFile(keyPath)
	if err != nil {
		return nil, err
	}
	key, err := ParseKeyPEM(keyPath, data)
	if err != nil {
		return nil, err
	}
	if !KeyMatches(key, cert.PublicKey) {
		return nil, fmt.Errorf("%s: private key does not match %s", keyPath, certPath)
	}
	return cert, nil
}

func checkKeyPair(keyPath, pubPath string) error {
	data, err := os.ReadFile(keyPath)
	if err != nil {
		return err
	}
	key, err := ParseKeyPEM(keyPath, data)
	if err != nil {
		return err
	}
	data, err = os.ReadFile(pubPath)
	if err != nil {
		return err
	}
	pub, err := ParsePublicKeyPEM(pubPath, data)
	if err != nil {
		return err
	}
	if !KeyMatches(key, pub) {
		return fmt.Errorf("%s: private key does not match %s", keyPath, pubPath)
	}
	return nil
}

// identityDiff describes how cert differs from the item's CN, O and SANs,
// or returns "".
func identityDiff(cert *x509.Certificate, it Item) string {
	if cert.Subject.CommonName != it.CN {
		return fmt.Sprintf("CN is %q, want %q", cert.Subject.CommonName, it.CN)
	}
	if !slices.Equal(cert.Subject.Organization, it.Orgs) && len(cert.Subject.Organization)+len(it.Orgs) > 0 {
		return fmt.Sprintf("O is %v, want %v", cert.Subject.Organization, it.Orgs)
	}
	have := map[string]bool{}
	for _, h := range certHosts(cert) {
		have[h] = true
	}
	var missing []string
	for _, h := range it.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			h = ip.String()
		}
		if !have[h] {
			missing = append(missing, h)
		}
	}
	if len(missing) > 0 {
		return fmt.Sprintf("SANs lack %s", strings.Join(missing, ", "))
	}
	return ""
}

func certHosts(cert *x509.Certificate) []string {
	hosts := slices.Clone(cert.DNSNames)
	for _, ip := range cert.IPAddresses {
		hosts = append(hosts, ip.String())
	}
	return hosts
}

// Conflicts returns the steps that stop Init.
func (p *Plan) Conflicts() []Step {
	var out []Step
	for _, s := range p.Steps {
		if s.Action == Conflict {
			out = append(out, s)
		}
	}
	return out
}

// Err returns one error describing the conflicts, or nil.
func (p *Plan) Err() error {
	c := p.Conflicts()
	if len(c) == 0 {
		return nil
	}
	more := ""
	if len(c) > 1 {
		more = fmt.Sprintf(" (and %d more; see kubegate pki plan)", len(c)-1)
	}
	return fmt.Errorf("%s exists and differs: %s; use --force to replace it%s",
		filepath.Join(p.Dir, c[0].Item.Paths()[0]), c[0].Reason, more)
}

// WriteText prints one line per step: action, files, note or reason.
func (p *Plan) WriteText(w io.Writer) error {
	var b bytes.Buffer
	for _, s := range p.Steps {
		why := s.Item.Note
		if s.Reason != "" {
			why = s.Reason
		}
		fmt.Fprintf(&b, "%-8s %-52s %s\n", s.Action, strings.Join(s.Item.Paths(), " "), why)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// File is a file to write, relative to a directory.
type File struct {
	Path      string
	Data      []byte
	Mode      fs.FileMode
	Overwrite bool
}

// Credential is a client cert to embed in a kubeconfig.
type Credential struct {
	Kubeconfig string // file name relative to DIR, for example "admin.conf"
	User       string
	CAPEM      []byte
	CertPEM    []byte
	KeyPEM     []byte
	Overwrite  bool
}

// Output is everything Build made, in memory, ready to write.
type Output struct {
	Files       []File
	Credentials []Credential
}

// Build generates keys and certificates for every create and replace
// step. It writes nothing; it fails if the plan has conflicts.
func (p *Plan) Build() (*Output, error) {
	if err := p.Err(); err != nil {
		return nil, err
	}
	out := &Output{}
	cas := map[string]*Authority{}
	for name, a := range p.cas {
		cas[name] = a
	}
	for _, s := range p.Steps {
		it := s.Item
		paths := it.Paths()
		if s.Action == Keep {
			continue
		}
		overwrite := s.Action == Replace
		switch it.Kind {
		case KindCA:
			a, keyPEM, err := CreateAuthority(it.Name, it.CN, p.Spec.KeyAlgorithm, p.Spec.CAValidity)
			if err != nil {
				return nil, err
			}
			cas[it.Name] = a
			out.Files = append(out.Files,
				File{Path: paths[0], Data: a.CertPEM, Mode: fsutil.ModePublic, Overwrite: overwrite},
				File{Path: paths[1], Data: keyPEM, Mode: fsutil.ModeKey, Overwrite: overwrite})
		case KindServiceAccount:
			key, keyPEM, err := GenerateKey(p.Spec.KeyAlgorithm)
			if err != nil {
				return nil, err
			}
			pubPEM, err := EncodePublicKey(key.Public())
			if err != nil {
				return nil, err
			}
			out.Files = append(out.Files,
				File{Path: paths[0], Data: keyPEM, Mode: fsutil.ModeKey, Overwrite: overwrite},
				File{Path: paths[1], Data: pubPEM, Mode: fsutil.ModePublic, Overwrite: overwrite})
		default:
			a := cas[it.CA]
			a.Now = p.Now
			iss, err := a.Issue(&Request{CN: it.CN, Orgs: it.Orgs, Hosts: it.Hosts, Profile: it.Profile,
				Validity: p.Spec.Validity, KeyAlgorithm: p.Spec.KeyAlgorithm})
			if err != nil {
				return nil, err
			}
			if it.Kind == KindKubeconfig {
				out.Credentials = append(out.Credentials, Credential{Kubeconfig: it.Name, User: it.User(),
					CAPEM: a.CertPEM, CertPEM: iss.CertPEM, KeyPEM: iss.KeyPEM, Overwrite: overwrite})
				continue
			}
			out.Files = append(out.Files,
				File{Path: paths[0], Data: iss.CertPEM, Mode: fsutil.ModePublic, Overwrite: overwrite},
				File{Path: paths[1], Data: iss.KeyPEM, Mode: fsutil.ModeKey, Overwrite: overwrite})
		}
	}
	return out, nil
}

// WriteFiles writes files under dir in one durable batch
// (fsutil.WriteFiles). A directory inside dir on the way to one of them
// that is a symbolic link is refused before anything is written
// (fsutil.NoLinkedDirs).
func WriteFiles(dir string, files []File) error {
	for _, f := range files {
		if err := fsutil.NoLinkedDirs(dir, filepath.Dir(f.Path)); err != nil {
			return err
		}
	}
	batch := make([]fsutil.File, len(files))
	for i, f := range files {
		batch[i] = fsutil.File{Path: filepath.Join(dir, f.Path), Data: f.Data, Mode: f.Mode, Overwrite: f.Overwrite}
	}
	return fsutil.WriteFiles(batch)
}
