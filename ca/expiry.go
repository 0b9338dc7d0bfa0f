package ca

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// ExpiryEntry is one row of an expiry report.
type ExpiryEntry struct {
	Name string `json:"name"`
	// Path is the file relative to DIR (the .crt, or the kubeconfig).
	Path string `json:"path"`
	// KubeconfigUser is the kubeconfig's users[] entry; "" for a .crt file.
	KubeconfigUser string `json:"kubeconfigUser,omitempty"`
	// Role is what the certificate is for (see Role).
	Role     string    `json:"role"`
	Kind     Kind      `json:"kind"`
	Subject  string    `json:"subject"`
	NotAfter time.Time `json:"expires"`
	// ResidualSeconds is negative once expired.
	ResidualSeconds int64  `json:"residualSeconds"`
	Residual        string `json:"residual"`
	Issuer          string `json:"issuer"`
}

// Expiry reports, for every certificate found, when it expires and what
// time remains at now.
func Expiry(found []*Found, now time.Time) []ExpiryEntry {
	out := make([]ExpiryEntry, 0, len(found))
	for _, f := range found {
		left := f.Cert.NotAfter.Sub(now)
		out = append(out, ExpiryEntry{
			Name:            f.Name,
			Path:            f.Path,
			KubeconfigUser:  f.User,
			Role:            Role(f),
			Kind:            f.Kind,
			Subject:         SubjectString(f.Cert.RawSubject),
			NotAfter:        f.Cert.NotAfter.UTC(),
			ResidualSeconds: int64(left / time.Second),
			Residual:        Residual(left),
			Issuer:          f.Issuer,
		})
	}
	return out
}

// kubeadmNames are the names kubeadm gives the files of its layout (its
// certs check-expiration lists them so), by path relative to DIR.
var kubeadmNames = map[string]string{
	"pki/ca.crt":                       "ca",
	"pki/front-proxy-ca.crt":           "front-proxy-ca",
	"pki/etcd/ca.crt":                  "etcd-ca",
	"pki/apiserver.crt":                "apiserver",
	"pki/apiserver-kubelet-client.crt": "apiserver-kubelet-client",
	"pki/front-proxy-client.crt":       "front-proxy-client",
	"pki/etcd/server.crt":              "etcd-server",
	"pki/etcd/peer.crt":                "etcd-peer",
	"pki/etcd/healthcheck-client.crt":  "etcd-healthcheck-client",
	"pki/apiserver-etcd-client.crt":    "apiserver-etcd-client",
	"admin.conf":                       "admin.conf",
	"super-admin.conf":                 "super-admin.conf",
	"scheduler.conf":                   "scheduler.conf",
	"controller-manager.conf":          "controller-manager.conf",
	"kubelet.conf":                     "kubelet.conf",
}

// Roles of certificates outside kubeadm's layout.
const (
	// RoleUser is a certificate under pki/users (where cert issue writes)
	// or the cert of any other kubeconfig in DIR (where kubeconfig create
	// writes).
	RoleUser = "user"
	// RoleOther is any other certificate under pki.
	RoleOther = "other"
)

// Role names what a certificate is for: kubeadm's name for the files of
// its layout ("apiserver", "etcd-server", "ca", "admin.conf", …), with
// kubelet-NODE.conf counted as "kubelet.conf"; otherwise RoleUser or
// RoleOther.
func Role(f *Found) string {
	if n, ok := kubeadmNames[f.Path]; ok {
		return n
	}
	switch {
	case f.Kind == KindKubeconfig && strings.HasPrefix(f.Path, "kubelet-") && strings.HasSuffix(f.Path, ".conf"):
		return "kubelet.conf"
	case f.Kind == KindKubeconfig, strings.HasPrefix(f.Path, PKIDir+"/users/"):
		return RoleUser
	}
	return RoleOther
}

// Residual formats remaining lifetime the way kubeadm's
// check-expiration does: minutes, hours, days, then years.
func Residual(d time.Duration) string {
	switch {
	case d <= 0:
		return "expired"
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	case d < 2*365*24*time.Hour:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	default:
		return fmt.Sprintf("%dy", int(d/(365*24*time.Hour)))
	}
}

// ExpiringWithin returns the entries with less than d left.
func ExpiringWithin(entries []ExpiryEntry, d time.Duration) []ExpiryEntry {
	var out []ExpiryEntry
	for _, e := range entries {
		if time.Duration(e.ResidualSeconds)*time.Second < d {
			out = append(out, e)
		}
	}
	return out
}

// WriteExpiryTable prints entries as an aligned table.
func WriteExpiryTable(w io.Writer, entries []ExpiryEntry) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "CERTIFICATE\tEXPIRES\tRESIDUAL TIME\tCERTIFICATE AUTHORITY")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Name, e.NotAfter.Format("Jan 02, 2006 15:04 UTC"), e.Residual, e.Issuer)
	}
	return tw.Flush()
}

// WriteExpiryJSON prints entries as an indented JSON array.
func WriteExpiryJSON(w io.Writer, entries []ExpiryEntry) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(entries)
}
