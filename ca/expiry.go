package ca

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// ExpiryEntry is one row of an expiry report.
type ExpiryEntry struct {
	Name     string    `json:"name"`
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
