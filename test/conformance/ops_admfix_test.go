package conformance

import (
	"bytes"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	protobufserializer "k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// admfixOps check what dynamic admission guards besides the writes of
// objects (docs/kubernetes-behaviour.md D.12, D.13): a policy or binding
// is written only by a user allowed to read its parameters, and the
// creates of subresources and the connects are admitted with the object
// they send.
func admfixOps() []op {
	const (
		group   = "/apis/admissionregistration.k8s.io/v1"
		rbacAPI = "/apis/rbac.authorization.k8s.io/v1/"
		author  = "--as=admfix-author" // may write policies and bindings, and read config maps
	)
	manifest := func(kind, name, spec string) string {
		return "apiVersion: admissionregistration.k8s.io/v1\nkind: " + kind + "\nmetadata:\n  name: " + name + "\nspec:\n" + spec
	}
	policy := func(name, paramKind string) string {
		return manifest("ValidatingAdmissionPolicy", name, "  paramKind: {apiVersion: v1, kind: "+paramKind+"}\n"+
			"  matchConstraints:\n    resourceRules:\n    - {apiGroups: [\"\"], apiVersions: [v1], operations: [CREATE], resources: [pods]}\n"+
			"  matchConditions:\n  - {name: never, expression: 'false'}\n  validations:\n  - expression: 'true'\n")
	}
	binding := func(name, policy, ref string) string {
		return manifest("ValidatingAdmissionPolicyBinding", name, "  policyName: "+policy+"\n  validationActions: [Deny]\n"+
			"  paramRef: {name: "+ref+", namespace: "+testNS+", parameterNotFoundAction: Deny}\n")
	}
	create := func(name, stdin string) op {
		return op{name: "admfix/" + name, kubectl: []string{"create", "-f", "-", author}, stdin: stdin}
	}
	status := func(code int) func(answer) bool { return func(a answer) bool { return a.status == code } }
	const pods = ns + "/pods"
	subresourceRules := `[{"apiGroups":[""],"apiVersions":["*"],"operations":["CREATE"],"resources":["pods/eviction","pods/binding","bindings","serviceaccounts/token"]},` +
		`{"apiGroups":[""],"apiVersions":["*"],"operations":["CONNECT"],"resources":["pods/exec","pods/attach","pods/portforward"]}]`
	ops := []op{
		{name: "admfix/sub-pod", method: "POST", path: pods, body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"admfix"},"spec":{"containers":[{"name":"c","image":"registry.example/app:1"}]}}`},
		{name: "admfix/sub-serviceaccount", method: "POST", path: ns + "/serviceaccounts", body: `{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"admfix"}}`},
		{name: "admfix/sub-policy", method: "POST", path: group + "/validatingadmissionpolicies", body: `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy",
"metadata":{"name":"admfix-subresources"},"spec":{"matchConstraints":{"resourceRules":` + subresourceRules + `},
"validations":[{"expression":"false","messageExpression":"'denied ' + request.operation + ' ' + request.resource.resource + '/' + request.subResource + ' of kind ' + object.kind + ' ' + object.apiVersion"}]}}`},
		{name: "admfix/sub-binding", method: "POST", path: group + "/validatingadmissionpolicybindings", body: `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding",
"metadata":{"name":"admfix-subresources"},"spec":{"policyName":"admfix-subresources","validationActions":["Deny"],
"matchResources":{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"` + testNS + `"}}}}}`},
		{name: "admfix/sub-token", method: "POST", path: ns + "/serviceaccounts/admfix/token", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`,
			until: status(422)},
		{name: "admfix/sub-eviction", method: "POST", path: pods + "/admfix/eviction", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"admfix"}}`},
		{name: "admfix/sub-pod-binding", method: "POST", path: pods + "/admfix/binding", body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"admfix"},"target":{"kind":"Node","name":"n1"}}`},
		{name: "admfix/sub-legacy-binding", method: "POST", path: ns + "/bindings", body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"admfix"},"target":{"kind":"Node","name":"n1"}}`},
		{name: "admfix/sub-exec", method: "POST", path: pods + "/admfix/exec?command=ls&stdout=true"},
		{name: "admfix/sub-attach", method: "POST", path: pods + "/admfix/attach?stdout=true"},
		{name: "admfix/sub-portforward", method: "POST", path: pods + "/admfix/portforward?ports=80"},
		{name: "admfix/sub-pod-still-there", method: "GET", path: pods + "/admfix"},
		{name: "admfix/sub-delete-binding", method: "DELETE", path: group + "/validatingadmissionpolicybindings/admfix-subresources"},
		{name: "admfix/sub-delete-policy", method: "DELETE", path: group + "/validatingadmissionpolicies/admfix-subresources"},
		{name: "admfix/sub-delete-pod", method: "DELETE", path: pods + "/admfix?gracePeriodSeconds=0"},
		{name: "admfix/sub-delete-serviceaccount", method: "DELETE", path: ns + "/serviceaccounts/admfix"},
	}
	// An update of deployments/scale is admitted as an autoscaling/v1 Scale.
	deps := "/apis/apps/v1/namespaces/" + testNS + "/deployments"
	ops = append(ops,
		op{name: "admfix/scale-deployment", method: "POST", path: deps, body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"admfix"},"spec":{"replicas":1,
"selector":{"matchLabels":{"app":"admfix"}},"template":{"metadata":{"labels":{"app":"admfix"}},"spec":{"containers":[{"name":"c","image":"registry.example/app:1"}]}}}}`},
		op{name: "admfix/scale-policy", method: "POST", path: group + "/validatingadmissionpolicies", body: `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy",
"metadata":{"name":"admfix-scale"},"spec":{"matchConstraints":{"resourceRules":[{"apiGroups":["apps"],"apiVersions":["*"],"operations":["UPDATE"],"resources":["deployments/scale"]}]},
"validations":[{"expression":"object.spec.replicas <= 3","messageExpression":"'kind ' + object.kind + ' ' + object.apiVersion + ' replicas ' + string(object.spec.replicas) + ' was ' + string(oldObject.spec.replicas)"}]}}`},
		op{name: "admfix/scale-binding", method: "POST", path: group + "/validatingadmissionpolicybindings", body: `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding",
"metadata":{"name":"admfix-scale"},"spec":{"policyName":"admfix-scale","validationActions":["Deny"],
"matchResources":{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"` + testNS + `"}}}}}`},
		op{name: "admfix/scale-deny-dry-run", method: "PATCH", path: deps + "/admfix/scale?dryRun=All", contentType: mergePatch, body: `{"spec":{"replicas":7}}`, until: status(422)},
		op{name: "admfix/scale-deny", method: "PUT", path: deps + "/admfix/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"admfix"},"spec":{"replicas":5}}`},
		op{name: "admfix/scale-allow", method: "PATCH", path: deps + "/admfix/scale", contentType: mergePatch, body: `{"spec":{"replicas":2}}`},
		op{name: "admfix/scale-deployment-update-not-matched", method: "PATCH", path: deps + "/admfix", contentType: mergePatch, body: `{"spec":{"replicas":5}}`},
		op{name: "admfix/scale-delete-binding", method: "DELETE", path: group + "/validatingadmissionpolicybindings/admfix-scale"},
		op{name: "admfix/scale-delete-policy", method: "DELETE", path: group + "/validatingadmissionpolicies/admfix-scale"},
		op{name: "admfix/scale-delete-deployment", method: "DELETE", path: deps + "/admfix"},
	)
	// A CRD in protobuf whose default is not JSON.
	ops = append(ops, op{name: "admfix/crd-protobuf-bad-json", method: "POST", path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
		contentType: protobuf, body: badJSONCRD()})
	return append(ops, []op{
		{name: "admfix/author-role", method: "POST", path: rbacAPI + "clusterroles", body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"admfix-author"},"rules":[
{"apiGroups":["admissionregistration.k8s.io"],"resources":["validatingadmissionpolicies","validatingadmissionpolicybindings"],"verbs":["*"]},
{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]}`},
		{name: "admfix/author-binding", method: "POST", path: rbacAPI + "clusterrolebindings", body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding","metadata":{"name":"admfix-author"},
"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"admfix-author"},"subjects":[{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"admfix-author"}]}`},
		create("param-kind-unreadable", policy("admfix-secrets", "Secret")),
		create("param-kind-unknown", policy("admfix-unknown", "NoSuchKind")),
		create("param-kind-readable", policy("admfix-configmaps", "ConfigMap")),
		{name: "admfix/param-kind-by-admin", method: "POST", path: group + "/validatingadmissionpolicies", body: policy("admfix-secrets", "Secret")},
		create("param-ref-unreadable", binding("admfix-secrets", "admfix-secrets", "db")),
		create("param-ref-no-policy", binding("admfix-missing", "admfix-missing", "db")),
		{name: "admfix/param-kind-unknown-by-admin", method: "POST", path: group + "/validatingadmissionpolicies", body: policy("admfix-unknown", "NoSuchKind")},
		create("param-ref-unresolved", binding("admfix-unknown", "admfix-unknown", "db")),
		create("param-ref-readable", binding("admfix-configmaps", "admfix-configmaps", "db")),
		{name: "admfix/param-ref-update", kubectl: []string{"patch", "validatingadmissionpolicybinding", "admfix-configmaps", "--type=merge",
			"-p", `{"spec":{"policyName":"admfix-secrets"}}`, author}},
		{name: "admfix/param-ref-update-labels", kubectl: []string{"label", "validatingadmissionpolicybinding", "admfix-configmaps", "a=b", author}},
		{name: "admfix/delete-param-binding", method: "DELETE", path: group + "/validatingadmissionpolicybindings/admfix-configmaps"},
		{name: "admfix/delete-param-policy", method: "DELETE", path: group + "/validatingadmissionpolicies/admfix-configmaps"},
		{name: "admfix/delete-param-policy-unknown", method: "DELETE", path: group + "/validatingadmissionpolicies/admfix-unknown"},
		{name: "admfix/delete-param-policy-secrets", method: "DELETE", path: group + "/validatingadmissionpolicies/admfix-secrets"},
	}...)
}

// badJSONCRD is a CRD, in protobuf, whose schema's default is not JSON.
func badJSONCRD() string {
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "admfixes.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "admfixes", Singular: "admfix", Kind: "Admfix", ListKind: "AdmfixList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte("{not json")}}}}}}}}}
	var b bytes.Buffer
	if err := protobufserializer.NewSerializer(nil, nil).Encode(crd, &b); err != nil {
		panic(err)
	}
	return b.String()
}
