package ca

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The metric families WriteExpiryPrometheus writes, both gauges.
const (
	// MetricExpirySeconds is the time left when the report was made,
	// negative once expired.
	MetricExpirySeconds = "kubegate_cert_expiry_seconds"
	// MetricNotAfter is the certificate's notAfter as a Unix time, which
	// alerts can compare with time() however old the file is.
	MetricNotAfter = "kubegate_cert_not_after_timestamp_seconds"
)

// PrometheusLabels are the labels of every series WriteExpiryPrometheus
// writes, in the order it writes them: the file relative to DIR, the
// kubeconfig user ("" for a .crt file), the Role, and the issuing CA's
// path (a self-signed CA's own path; "unknown" when no CA of the tree
// signed it).
var PrometheusLabels = []string{"path", "kubeconfig_user", "role", "ca"}

// WriteExpiryPrometheus prints entries in the Prometheus text exposition
// format, as node-exporter's textfile collector reads it: one gauge
// series per certificate in each of MetricExpirySeconds and
// MetricNotAfter, sorted by path and kubeconfig user, with no timestamps
// (the collector refuses them). docs/kubernetes-behaviour.md H.7 describes
// the format.
func WriteExpiryPrometheus(w io.Writer, entries []ExpiryEntry) error {
	sorted := slices.Clone(entries)
	slices.SortFunc(sorted, func(a, b ExpiryEntry) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.KubeconfigUser, b.KubeconfigUser)
	})
	var b bytes.Buffer
	family := func(name, help string, value func(ExpiryEntry) int64) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
		for _, e := range sorted {
			issuer := e.Issuer
			if issuer == "-" {
				issuer = e.Path
			}
			b.WriteString(name)
			for i, v := range []string{e.Path, e.KubeconfigUser, e.Role, issuer} {
				sep := ","
				if i == 0 {
					sep = "{"
				}
				fmt.Fprintf(&b, `%s%s="%s"`, sep, PrometheusLabels[i], escapeLabelValue(v))
			}
			fmt.Fprintf(&b, "} %d\n", value(e))
		}
	}
	family(MetricExpirySeconds, "Seconds left until the certificate expires, at the time of the report; negative once expired.",
		func(e ExpiryEntry) int64 { return e.ResidualSeconds })
	family(MetricNotAfter, "The certificate's notAfter, in seconds since the Unix epoch.",
		func(e ExpiryEntry) int64 { return e.NotAfter.Unix() })
	_, err := w.Write(b.Bytes())
	return err
}

var labelValueEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// escapeLabelValue makes s a valid label value: UTF-8 (a file name need
// not be; bad bytes become U+FFFD) with backslash, double quote and line
// feed escaped.
func escapeLabelValue(s string) string {
	return labelValueEscaper.Replace(strings.ToValidUTF8(s, "\uFFFD"))
}
