package inspect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteJSON writes r as indented JSON: the same facts as WriteText plus
// the PEM of every certificate.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// WriteText writes r for people, in aligned "Label: value" lines.
func (r *Report) WriteText(w io.Writer) error {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	p := &printer{w: tw}
	r.print(p)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// printer writes indented "Label:\tvalue" lines for a tabwriter.
type printer struct {
	w      io.Writer
	indent string
	blank  bool // a blank line is due before the next section
}

func (p *printer) section(format string, args ...any) {
	if p.blank {
		fmt.Fprintln(p.w)
	}
	p.blank = true
	fmt.Fprintf(p.w, p.indent+format+"\n", args...)
}

func (p *printer) line(format string, args ...any) {
	fmt.Fprintf(p.w, p.indent+"  "+format+"\n", args...)
}

func (p *printer) field(label, value string) {
	fmt.Fprintf(p.w, "%s  %s:\t%s\n", p.indent, label, value)
}

// nested prints f's output indented one level deeper, without blank lines.
func (p *printer) nested(f func(*printer)) {
	q := &printer{w: p.w, indent: p.indent + "  "}
	f(q)
}

func (r *Report) print(p *printer) {
	for i, c := range r.Certificates {
		if len(r.Certificates) == 1 {
			p.section("Certificate")
		} else {
			p.section("Certificate %d of %d", i+1, len(r.Certificates))
		}
		c.print(p)
	}
	if len(r.Certificates) > 0 {
		p.section("Chain")
		printChain(p, r.Chain, "pass --ca FILE to verify")
	}
	for i, c := range r.CSRs {
		if len(r.CSRs) == 1 {
			p.section("Certificate request")
		} else {
			p.section("Certificate request %d of %d", i+1, len(r.CSRs))
		}
		c.print(p)
	}
	for _, k := range r.Keys {
		if k.Private {
			p.section("Private key")
		} else {
			p.section("Public key")
		}
		k.print(p)
	}
	if r.Kubeconfig != nil {
		r.Kubeconfig.print(p)
	}
	if r.JWT != nil {
		p.section("JWT (%s)", r.JWT.Type)
		r.JWT.print(p)
	}
}

func printChain(p *printer, v *Verification, hint string) {
	switch {
	case v == nil:
		p.field("Result", "not checked ("+hint+")")
	case v.Verified:
		p.field("Result", "verified against "+v.Against)
		if len(v.Chain) > 0 {
			p.field("Path", strings.Join(v.Chain, " -> "))
		}
	default:
		p.field("Result", "NOT verified against "+v.Against)
		p.field("Reason", v.Reason)
	}
}

func timeString(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

func (v Validity) String() string {
	if v.Status == "valid" {
		return "valid, " + v.TimeLeft + " left"
	}
	return v.TimeLeft
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func sans(dns, ips, emails, uris []string) string {
	var s []string
	for _, v := range dns {
		s = append(s, "DNS:"+v)
	}
	for _, v := range ips {
		s = append(s, "IP Address:"+v)
	}
	for _, v := range emails {
		s = append(s, "email:"+v)
	}
	for _, v := range uris {
		s = append(s, "URI:"+v)
	}
	return strings.Join(s, ", ")
}

func optional(p *printer, label, value string) {
	if value != "" {
		p.field(label, value)
	}
}

func (c *Certificate) print(p *printer) {
	p.field("Subject", c.Subject)
	p.field("Issuer", c.Issuer)
	p.field("Serial", fmt.Sprintf("%s (%s)", c.Serial, c.SerialDecimal))
	p.field("Not before", timeString(c.NotBefore))
	p.field("Not after", fmt.Sprintf("%s (%s)", timeString(c.NotAfter), c.Validity))
	p.field("Public key", c.PublicKey.String())
	p.field("Signature algorithm", c.SignatureAlgorithm)
	ca := yesNo(c.IsCA)
	if c.SelfSigned {
		ca += ", self-signed"
	}
	p.field("CA", ca)
	optional(p, "SANs", sans(c.DNSNames, c.IPAddresses, c.EmailAddresses, c.URIs))
	optional(p, "Key usage", strings.Join(c.KeyUsage, ", "))
	optional(p, "Extended key usage", strings.Join(c.ExtKeyUsage, ", "))
	optional(p, "Subject key ID", c.SubjectKeyID)
	optional(p, "Authority key ID", c.AuthorityKeyID)
	p.field("SHA-256 fingerprint", c.SHA256)
	if c.Identity != nil {
		p.line("Kubernetes identity (kube-apiserver's x509 client-certificate mapping):")
		p.nested(c.Identity.print)
	}
}

func (id *Identity) print(p *printer) {
	p.field("User", id.User)
	if id.UID != "" {
		p.field("UID", id.UID)
	} else {
		p.field("UID", "(none)")
	}
	if len(id.Groups) == 0 {
		p.field("Groups", "(none)")
	} else {
		p.field("Groups", strings.Join(id.Groups, ", "))
	}
	for _, k := range sortedKeys(id.Extra) {
		p.field("Extra", k+"="+strings.Join(id.Extra[k], ","))
	}
	for _, pr := range id.Problems {
		p.field("Problem", pr)
	}
}

func (c *CSR) print(p *printer) {
	p.field("Subject", c.Subject)
	p.field("Public key", c.PublicKey.String())
	p.field("Signature algorithm", c.SignatureAlgorithm)
	if c.SignatureValid {
		p.field("Signature", "valid (the requester holds the private key)")
	} else {
		p.field("Signature", "INVALID: "+c.SignatureError)
	}
	optional(p, "SANs", sans(c.DNSNames, c.IPAddresses, c.EmailAddresses, c.URIs))
	p.line("Kubernetes identity of a client certificate issued for it:")
	p.nested(c.Identity.print)
}

func (k *Key) print(p *printer) {
	p.field("Type", k.String())
	p.field("PEM type", k.PEMType)
	optional(p, "Service-account key ID", k.KeyID)
}

func (k *Kubeconfig) print(p *printer) {
	p.section("Kubeconfig")
	cur := k.CurrentContext
	if cur == "" {
		cur = "(none)"
	}
	p.field("Current context", cur)
	p.field("Contexts", fmt.Sprint(len(k.Contexts)))
	p.field("Clusters", fmt.Sprint(len(k.Clusters)))
	p.field("Users", fmt.Sprint(len(k.Users)))
	for _, c := range k.Contexts {
		p.section("Context %q", c.Name)
		p.field("Cluster", c.Cluster)
		p.field("User", c.User)
		optional(p, "Namespace", c.Namespace)
		for _, pr := range c.Problems {
			p.field("Problem", pr)
		}
	}
	for _, c := range k.Clusters {
		p.section("Cluster %q", c.Name)
		p.field("Server", c.Server)
		optional(p, "TLS server name", c.TLSServerName)
		optional(p, "CA file", c.CAFile)
		for _, pr := range c.Problems {
			p.field("Problem", pr)
		}
		for i, ca := range c.CA {
			p.line("CA certificate %d of %d:", i+1, len(c.CA))
			p.nested(ca.print)
		}
	}
	for _, u := range k.Users {
		p.section("User %q", u.Name)
		u.print(p)
	}
}

func (u *KubeUser) print(p *printer) {
	p.field("Credential", u.Credential)
	optional(p, "Certificate file", u.CertFile)
	optional(p, "Key file", u.KeyFile)
	optional(p, "Token file", u.TokenFile)
	optional(p, "Exec command", u.Exec)
	optional(p, "Auth provider", u.AuthProvider)
	optional(p, "Basic-auth user", u.BasicAuth)
	if u.TokenLength > 0 {
		p.field("Token", fmt.Sprintf("opaque, %d characters (not shown)", u.TokenLength))
	}
	if u.Key != nil {
		key := u.Key.String()
		if u.KeyMatches != nil {
			if *u.KeyMatches {
				key += ", matches the certificate"
			} else {
				key += ", does NOT match the certificate"
			}
		}
		p.field("Client key", key)
	}
	for _, pr := range u.Problems {
		p.field("Problem", pr)
	}
	for i, c := range u.Certificates {
		p.line("Client certificate %d of %d:", i+1, len(u.Certificates))
		p.nested(c.print)
	}
	if len(u.Certificates) > 0 {
		p.line("Chain:")
		if len(u.Chains) == 0 {
			p.nested(func(q *printer) { printChain(q, nil, "no context pairs this user with a cluster CA; pass --ca FILE") })
		}
		for _, v := range u.Chains {
			p.nested(func(q *printer) { printChain(q, v, "") })
		}
	}
	if u.Token != nil {
		p.line("Token: JWT (%s):", u.Token.Type)
		p.nested(u.Token.print)
	}
}

func (j *JWT) print(p *printer) {
	head, _ := json.Marshal(j.Header)
	p.field("Header", string(head))
	optional(p, "Issuer", j.Issuer)
	optional(p, "Audiences", strings.Join(j.Audiences, ", "))
	if j.IssuedAt != nil {
		p.field("Issued at", timeString(*j.IssuedAt))
	}
	if j.NotBefore != nil {
		p.field("Not before", timeString(*j.NotBefore))
	}
	if j.Expires != nil {
		p.field("Expires", fmt.Sprintf("%s (%s)", timeString(*j.Expires), j.Validity))
	} else {
		p.field("Expires", j.TimeLeft)
	}
	switch s := j.Signature; {
	case s == nil:
		p.field("Signature", "not checked (pass --key sa.pub to verify)")
	case s.Verified:
		p.field("Signature", "verified with "+s.Against)
	default:
		p.field("Signature", "NOT verified with "+s.Against+": "+s.Reason)
	}
	if j.Identity != nil {
		p.line("Kubernetes identity (kube-apiserver's service-account mapping):")
		p.nested(j.Identity.print)
	}
	p.line("Claims:")
	claims, _ := json.MarshalIndent(j.Claims, "", "  ")
	for _, l := range strings.Split(string(claims), "\n") {
		// Tabs would be read as tabwriter cells; JSON output never
		// holds a raw tab, but be safe.
		p.line("  %s", strings.ReplaceAll(l, "\t", " "))
	}
}
