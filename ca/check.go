package ca

import (
	"bytes"
	"crypto/x509"
	"encoding/asn1"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
)

// CheckOptions say what the tree was meant to be.
type CheckOptions struct {
	ClusterDomain string    // default "cluster.local"
	ServiceCIDR   string    // default "10.96.0.0/12"
	Now           time.Time // zero: time.Now()
}

// Finding is one problem in a tree.
type Finding struct {
	File    string `json:"file"`
	Problem string `json:"problem"`
}

// Report is the result of Check.
type Report struct {
	Checked  int       `json:"checked"`
	Findings []Finding `json:"findings"`
	// Warnings are not problems of the tree but need attention: a CA
	// rotation stopped between two phases.
	Warnings []Finding `json:"warnings,omitempty"`
}

// WriteText prints one line per finding and a summary line.
func (r *Report) WriteText(w io.Writer) error {
	var b bytes.Buffer
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "%s: %s\n", f.File, f.Problem)
	}
	for _, f := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s: %s\n", f.File, f.Problem)
	}
	if len(r.Findings) == 0 {
		fmt.Fprintf(&b, "%d certificates checked, no problems\n", r.Checked)
	} else {
		fmt.Fprintf(&b, "%d certificates checked, %d problems\n", r.Checked, len(r.Findings))
	}
	_, err := w.Write(b.Bytes())
	return err
}

// role is what a well-known file in the kubeadm layout must be.
type role struct {
	ca     string   // issuing CA name; "" for a CA
	cn     string   // exact CN; "" for any
	cnPfx  string   // required CN prefix
	orgs   []string // required O values; nil for no requirement
	server bool     // needs serverAuth
	client bool     // needs clientAuth
	admin  bool     // may hold system:masters
}

var roles = map[string]role{
	"pki/ca.crt":                       {},
	"pki/front-proxy-ca.crt":           {},
	"pki/etcd/ca.crt":                  {},
	"pki/apiserver.crt":                {ca: "pki/ca.crt", cn: "kube-apiserver", server: true},
	"pki/apiserver-kubelet-client.crt": {ca: "pki/ca.crt", cn: "kube-apiserver-kubelet-client", client: true},
	"pki/front-proxy-client.crt":       {ca: "pki/front-proxy-ca.crt", cn: "front-proxy-client", client: true},
	"pki/etcd/server.crt":              {ca: "pki/etcd/ca.crt", server: true},
	"pki/etcd/peer.crt":                {ca: "pki/etcd/ca.crt", server: true, client: true},
	"pki/etcd/healthcheck-client.crt":  {ca: "pki/etcd/ca.crt", cn: "kube-etcd-healthcheck-client", client: true},
	"pki/apiserver-etcd-client.crt":    {ca: "pki/etcd/ca.crt", cn: "kube-apiserver-etcd-client", client: true},
	"admin.conf":                       {ca: "pki/ca.crt", cn: "kubernetes-admin", client: true},
	"super-admin.conf":                 {ca: "pki/ca.crt", orgs: []string{"system:masters"}, client: true, admin: true},
	"scheduler.conf":                   {ca: "pki/ca.crt", cn: "system:kube-scheduler", client: true},
	"controller-manager.conf":          {ca: "pki/ca.crt", cn: "system:kube-controller-manager", client: true},
	"kubelet.conf":                     {ca: "pki/ca.crt", cnPfx: "system:node:", orgs: []string{"system:nodes"}, client: true},
}

func roleOf(f *Found) (role, bool) {
	name := f.Name
	if f.Kind == KindKubeconfig {
		name, _, _ = strings.Cut(name, ":")
		if strings.HasPrefix(name, "kubelet-") && strings.HasSuffix(name, ".conf") {
			name = "kubelet.conf"
		}
	}
	r, ok := roles[name]
	return r, ok
}

// wellKnown are identities Kubernetes gives meaning to; a near miss of
// one is almost certainly a typo.
var wellKnown = []string{
	"system:kube-scheduler", "system:kube-controller-manager", "system:kube-proxy",
	"system:masters", "system:nodes", "system:node", "system:authenticated",
	"system:serviceaccounts", "kubeadm:cluster-admins", "kube-apiserver", "front-proxy-client",
}

// Check lints the tree in dir (ours or another tool's) and the embedded
// kubeconfig certs. It returns an error only when the tree cannot be read.
func Check(dir string, embedded []Embedded, opt CheckOptions) (*Report, error) {
	if opt.ClusterDomain == "" {
		opt.ClusterDomain = "cluster.local"
	}
	if opt.ServiceCIDR == "" {
		opt.ServiceCIDR = "10.96.0.0/12"
	}
	if opt.Now.IsZero() {
		opt.Now = time.Now()
	}
	svcIP, err := ServiceIP(opt.ServiceCIDR)
	if err != nil {
		return nil, err
	}
	found, err := Scan(dir, embedded)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no certificates found in %s", filepath.Join(dir, PKIDir))
	}
	byName := map[string]*Found{}
	for _, f := range found {
		byName[f.Name] = f
	}
	r := &Report{Checked: len(found)}
	add := func(file, format string, args ...any) {
		r.Findings = append(r.Findings, Finding{File: file, Problem: fmt.Sprintf(format, args...)})
	}
	for _, f := range found {
		c := f.Cert
		if opt.Now.After(c.NotAfter) {
			add(f.Name, "expired on %s", c.NotAfter.UTC().Format(time.DateOnly))
		} else if opt.Now.Before(c.NotBefore) {
			add(f.Name, "not valid until %s", c.NotBefore.UTC().Format(time.DateTime))
		}
		if f.Key != nil && !KeyMatches(f.Key, c.PublicKey) {
			add(f.Name, "private key %s does not match the certificate", f.KeyFile)
		}
		if err := checkHiddenSubject(c.Subject); err != nil {
			add(f.Name, "%v; cert renew and ca rotate refuse to sign it again: issue it anew, or move it out of the tree", err)
		}
		for _, n := range subjectNames(c.Subject) {
			if err := ValidateName(n.kind, n.value); err != nil {
				add(f.Name, "%v, so identity headers would not carry it as written", err)
			}
		}
		for _, name := range append([]string{c.Subject.CommonName}, c.Subject.Organization...) {
			if typo := nearMiss(name); typo != "" {
				add(f.Name, "%q looks like a mistyped %q", name, typo)
			}
		}
		rl, known := roleOf(f)
		if slices.Contains(c.Subject.Organization, "system:masters") && !rl.admin {
			add(f.Name, "O=system:masters (unrestricted, bypasses RBAC) belongs only on the break-glass super-admin.conf")
		}
		if f.Kind == KindCA {
			// Without a keyUsage extension every usage is allowed (RFC 5280
			// 4.2.1.3), as in a plain `openssl req -x509` CA.
			if hasKeyUsageExtension(c) && c.KeyUsage&x509.KeyUsageCertSign == 0 {
				add(f.Name, "CA lacks the keyCertSign key usage")
			}
			continue
		}
		if c.IsCA {
			add(f.Name, "leaf certificate has CA:TRUE")
		}
		if !known {
			if f.Issuer == "unknown" {
				add(f.Name, "not signed by any CA in the tree")
			}
			continue
		}
		checkRole(f, rl, byName, add)
		if f.Name == "pki/apiserver.crt" {
			want := "kubernetes.default.svc." + opt.ClusterDomain
			if !slices.Contains(c.DNSNames, want) {
				add(f.Name, "SANs lack %s", want)
			}
			if !slices.ContainsFunc(c.IPAddresses, func(ip net.IP) bool { return ip.Equal(svcIP) }) {
				add(f.Name, "SANs lack the service IP %s (first IP of %s)", svcIP, opt.ServiceCIDR)
			}
		}
	}
	client, proxy := byName["pki/ca.crt"], byName["pki/front-proxy-ca.crt"]
	if client != nil && proxy != nil && client.Cert.PublicKey != nil &&
		(bytes.Equal(client.Cert.Raw, proxy.Cert.Raw) || KeyMatchesPublic(client.Cert, proxy.Cert)) {
		add(proxy.Name, "front-proxy CA is the same as the client CA pki/ca.crt, so any client cert could assert identities as a proxy")
	}
	checkSA(dir, add)
	if st, err := ReadRotationState(dir); err != nil {
		add(RotationStateFile, "%v", err)
	} else if st.InProgress() {
		r.Warnings = append(r.Warnings, Finding{File: RotationStateFile, Problem: RotationStatus(dir, st)})
	}
	sort.SliceStable(r.Findings, func(i, j int) bool { return r.Findings[i].File < r.Findings[j].File })
	return r, nil
}

// KeyMatchesPublic reports whether two certificates carry the same public key.
func KeyMatchesPublic(a, b *x509.Certificate) bool {
	return bytes.Equal(a.RawSubjectPublicKeyInfo, b.RawSubjectPublicKeyInfo)
}

func checkRole(f *Found, rl role, byName map[string]*Found, add func(string, string, ...any)) {
	c := f.Cert
	if rl.cn != "" && c.Subject.CommonName != rl.cn {
		add(f.Name, "CN is %q, want %q", c.Subject.CommonName, rl.cn)
	}
	if rl.cnPfx != "" && (!strings.HasPrefix(c.Subject.CommonName, rl.cnPfx) || c.Subject.CommonName == rl.cnPfx) {
		add(f.Name, "CN is %q, want %sNODE", c.Subject.CommonName, rl.cnPfx)
	}
	for _, o := range rl.orgs {
		if !slices.Contains(c.Subject.Organization, o) {
			add(f.Name, "O is %q, want it to include %q", c.Subject.Organization, o)
		}
	}
	hasEKU := func(u x509.ExtKeyUsage) bool {
		return slices.Contains(c.ExtKeyUsage, u) || slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageAny)
	}
	if rl.server && !hasEKU(x509.ExtKeyUsageServerAuth) {
		add(f.Name, "extended key usage lacks serverAuth, which a serving cert needs")
	}
	if rl.client && !hasEKU(x509.ExtKeyUsageClientAuth) {
		add(f.Name, "extended key usage lacks clientAuth, which a client cert needs")
	}
	if !rl.server && hasEKU(x509.ExtKeyUsageServerAuth) && !slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageAny) {
		add(f.Name, "client-only identity also has the serverAuth extended key usage")
	}
	if c.KeyUsage&x509.KeyUsageDigitalSignature == 0 {
		add(f.Name, "key usage lacks digitalSignature, which TLS needs")
	}
	if c.KeyUsage&(x509.KeyUsageCertSign|x509.KeyUsageCRLSign) != 0 {
		add(f.Name, "leaf certificate has the keyCertSign or cRLSign key usage")
	}
	if ca := byName[rl.ca]; ca != nil && c.CheckSignatureFrom(ca.Cert) != nil {
		add(f.Name, "not signed by %s (signed by %s)", rl.ca, f.Issuer)
	}
}

func checkSA(dir string, add func(string, string, ...any)) {
	keyPath := filepath.Join(dir, PKIDir, "sa.key")
	pubPath := filepath.Join(dir, PKIDir, "sa.pub")
	if _, err := os.Stat(keyPath); err != nil {
		return
	}
	if err := checkKeyPair(keyPath, pubPath); err != nil {
		add(path.Join(PKIDir, "sa.key"), "%s", strings.TrimPrefix(err.Error(), keyPath+": "))
	}
}

// nearMiss returns the well-known identity s is one or two edits from (or
// a doubled "system:" prefix of), or "".
func nearMiss(s string) string {
	if rest, ok := strings.CutPrefix(s, "system:system:"); ok {
		return "system:" + rest
	}
	for _, w := range wellKnown {
		if s == w || strings.HasPrefix(s, "system:node:") {
			return ""
		}
	}
	for _, w := range wellKnown {
		if d := editDistance(s, w); d > 0 && d <= 2 {
			return w
		}
	}
	return ""
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// hasKeyUsageExtension reports whether c carries a keyUsage extension.
func hasKeyUsageExtension(c *x509.Certificate) bool {
	for _, e := range c.Extensions {
		if e.Id.Equal(asn1.ObjectIdentifier{2, 5, 29, 15}) {
			return true
		}
	}
	return false
}
