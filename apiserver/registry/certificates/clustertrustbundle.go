package certificates

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubegate/kubegate/apiserver"
)

// maxTrustBundleSize bounds a bundle's PEM, as kube-apiserver does.
const maxTrustBundleSize = 1 << 20

// ClusterTrustBundlesGVR are the cluster-scoped trust bundles (H.8).
var ClusterTrustBundlesGVR = certificatesv1.SchemeGroupVersion.WithResource("clustertrustbundles")

// clusterTrustBundles are the bundles of CA certificates a signer
// publishes (H.8): a bundle of a signer is named after it, its signer
// never changes, and an update must name the version it replaces. Who
// may publish for a signer is checked by the ClusterTrustBundleAttest
// admission plugin.
func clusterTrustBundles() *apiserver.Resource {
	return &apiserver.Resource{GVR: ClusterTrustBundlesGVR, Kind: "ClusterTrustBundle", Singular: "clustertrustbundle",
		ValidateName: anyName, RequireResourceVersion: true, StoredAs: certificatesv1beta1.SchemeGroupVersion.WithKind("ClusterTrustBundle"), Validate: validateClusterTrustBundle, Table: clusterTrustBundleTable}
}

// validateClusterTrustBundle: the name (after the signer, if there is
// one), the signer's name and, unless an update leaves it as it was, the
// PEM bundle; the signer never changes.
func validateClusterTrustBundle(obj, old runtime.Object) field.ErrorList {
	b := obj.(*certificatesv1.ClusterTrustBundle)
	errs := invalidName(field.NewPath("metadata", "name"), b.Name, clusterTrustBundleName(b.Spec.SignerName, b.Name))
	if b.Spec.SignerName != "" {
		errs = append(errs, validateSignerName(field.NewPath("spec", "signerName"), b.Spec.SignerName)...)
	}
	var o *certificatesv1.ClusterTrustBundle
	if old != nil {
		o = old.(*certificatesv1.ClusterTrustBundle)
	}
	if o == nil || o.Spec.TrustBundle != b.Spec.TrustBundle {
		errs = append(errs, validateTrustBundle(field.NewPath("spec", "trustBundle"), b.Spec.TrustBundle)...)
	}
	if o != nil {
		errs = append(errs, apivalidation.ValidateImmutableField(b.Spec.SignerName, o.Spec.SignerName, field.NewPath("spec", "signerName"))...)
	}
	return errs
}

func invalidName(p *field.Path, name string, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, m := range msgs {
		errs = append(errs, field.Invalid(p, name, m))
	}
	return errs
}

// clusterTrustBundleName: a bundle without a signer has a DNS subdomain
// name without ':'; a signer's is SIGNER:NAME, the signer's '/' written
// ':', and NAME a DNS subdomain.
func clusterTrustBundleName(signer, name string) []string {
	if signer == "" {
		if strings.Contains(name, ":") {
			return []string{`ClusterTrustBundle without signer name must not have ":" in its name`}
		}
		return apivalidation.NameIsDNSSubdomain(name, false)
	}
	prefix := strings.ReplaceAll(signer, "/", ":") + ":"
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signer, prefix)}
	}
	return apivalidation.NameIsDNSSubdomain(rest, false)
}

// validateTrustBundle: PEM CERTIFICATE blocks without headers, each a CA
// certificate, none twice, at least one.
func validateTrustBundle(p *field.Path, bundle string) field.ErrorList {
	if len(bundle) > maxTrustBundleSize {
		return field.ErrorList{field.TooLong(p, "", maxTrustBundleSize)}
	}
	invalid := func(format string, args ...any) *field.Error {
		return field.Invalid(p, "<value omitted>", fmt.Sprintf(format, args...))
	}
	var errs field.ErrorList
	seen := map[string][]int{}
	var order []string
	rest := []byte(bundle)
	for i := 0; ; i++ {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		switch cert, err := x509.ParseCertificate(b.Bytes); {
		case b.Type != "CERTIFICATE":
			errs = append(errs, invalid("entry %d has bad block type: %v", i, b.Type))
		case len(b.Headers) != 0:
			errs = append(errs, invalid("entry %d has PEM block headers", i))
		case err != nil:
			errs = append(errs, invalid("entry %d does not parse as X.509", i))
		case !cert.IsCA:
			errs = append(errs, invalid("entry %d does not have the CA bit set", i))
		case !cert.BasicConstraintsValid:
			errs = append(errs, invalid("entry %d has invalid basic constraints", i))
		default:
			if _, ok := seen[string(b.Bytes)]; !ok {
				order = append(order, string(b.Bytes))
			}
			seen[string(b.Bytes)] = append(seen[string(b.Bytes)], i)
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if len(seen) == 0 {
		return field.ErrorList{invalid("at least one trust anchor must be provided")}
	}
	for _, der := range order {
		if idx := seen[der]; len(idx) > 1 {
			errs = append(errs, invalid("duplicate trust anchor (indices %v)", idx))
		}
	}
	return errs
}

// clusterTrustBundleTable is kube's: the name and the signer, <none>
// without one, and no age.
var clusterTrustBundleTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn,
		{Name: "SignerName", Type: "string", Description: certificatesv1.ClusterTrustBundleSpec{}.SwaggerDoc()["signerName"]}},
	Cells: func(obj runtime.Object, _ time.Time) []any {
		b := obj.(*certificatesv1.ClusterTrustBundle)
		signer := b.Spec.SignerName
		if signer == "" {
			signer = "<none>"
		}
		return []any{b.Name, signer}
	},
}
