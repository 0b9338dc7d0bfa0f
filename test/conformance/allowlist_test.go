package conformance

// deliberate lists the operations where kubegate answers differently from
// kube-apiserver on purpose, each with its reason. docs/kubernetes-behaviour.md
// gives the same reasons.
var deliberate = map[string]string{
	"version": "kubegate reports the Kubernetes version of the types it serves; a Kubernetes build's gitCommit and buildDate " +
		"do not exist for it, so both are empty",
	"pod/delete-bound": "a bound pod whose node does not exist is deleted at once: no kubelet will ever confirm the deletion, " +
		"and kube-controller-manager's pod garbage collector would force-delete it",
	"pod/get-deleting": "follows from pod/delete-bound: the pod is gone",
	"endpoints/kubernetes": "kubegate up lists its gateway at the host's default-route address, as the lease reconciler " +
		"lists an API server; the reference kube-apiserver listens on loopback, which kube refuses to advertise, so it runs " +
		"with --endpoint-reconciler-type=none and writes none",
	"endpointslice/kubernetes": "follows from endpoints/kubernetes: the same address in the EndpointSlice",
}

// notYetClosed lists the differences found and not yet closed, each with
// what differs. The test fails when one of them starts to answer like
// kube-apiserver, so that it is taken off, and on any difference that is
// not listed here or in deliberate.
var notYetClosed = map[string]string{
	"job/update-template": "a Job's immutable template is shown in its v1 form; kube-apiserver shows its internal form (Go field names, no omitted fields, ObjectMeta inlined)",
}

// knownDifferences is both lists.
var knownDifferences = func() map[string]string {
	m := map[string]string{}
	for k, v := range notYetClosed {
		m[k] = "not yet closed: " + v
	}
	for k, v := range deliberate {
		m[k] = "deliberate: " + v
	}
	return m
}()

// describedOtherwise are the fields whose description in kubegate's
// OpenAPI documents, k8s.io/api's SwaggerDoc, is not kube's: SwaggerDoc's
// generator ends a comment at a line of dashes (a Markdown table's, or
// "rw-rw----") and keeps backslashes unescaped where kube's generator
// doubles them; and types of apimachinery that have no SwaggerDoc at all.
// The schema operations compare every other description.
var describedOtherwise = map[string]string{
	// Types of apimachinery without SwaggerDoc: kube describes them from
	// their doc comments; kubegate gives them no description.
	"io.k8s.apimachinery.pkg.apis.meta.v1.Time":                     "no SwaggerDoc",
	"io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime":                "no SwaggerDoc",
	"io.k8s.apimachinery.pkg.api.resource.Quantity":                 "no SwaggerDoc",
	"io.k8s.apimachinery.pkg.util.intstr.IntOrString":               "no SwaggerDoc",
	"io.k8s.apimachinery.pkg.runtime.RawExtension":                  "no SwaggerDoc",
	"io.k8s.api.core.v1.PodSecurityContext.fsGroup":                 "SwaggerDoc ends at rw-rw----",
	"io.k8s.api.core.v1.PodSpec.setHostnameAsFQDN":                  "kube doubles the backslashes of a registry key",
	"io.k8s.api.core.v1.TopologySpreadConstraint.maxSkew":           "SwaggerDoc ends at a Markdown table",
	"io.k8s.api.core.v1.TopologySpreadConstraint.minDomains":        "SwaggerDoc ends at a Markdown table",
	"io.k8s.api.core.v1.TopologySpreadConstraint.whenUnsatisfiable": "SwaggerDoc ends at a Markdown table",
}
