package apiserver

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// Kind-specific behaviour of the built-in resources: selectable fields,
// server-side defaults, validation and status handling.

func nodeFields(obj runtime.Object, set fields.Set) {
	set["spec.unschedulable"] = strconv.FormatBool(obj.(*corev1.Node).Spec.Unschedulable)
}

func secretFields(obj runtime.Object, set fields.Set) {
	set["type"] = string(obj.(*corev1.Secret).Type)
}

func coreEventFields(obj runtime.Object, set fields.Set) {
	e := obj.(*corev1.Event)
	set["involvedObject.kind"] = e.InvolvedObject.Kind
	set["involvedObject.namespace"] = e.InvolvedObject.Namespace
	set["involvedObject.name"] = e.InvolvedObject.Name
	set["involvedObject.uid"] = string(e.InvolvedObject.UID)
	set["involvedObject.apiVersion"] = e.InvolvedObject.APIVersion
	set["involvedObject.resourceVersion"] = e.InvolvedObject.ResourceVersion
	set["involvedObject.fieldPath"] = e.InvolvedObject.FieldPath
	set["reason"] = e.Reason
	set["reportingComponent"] = e.ReportingController
	set["source"] = e.Source.Component
	set["type"] = e.Type
}

func defaultNamespace(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels[corev1.LabelMetadataName] = ns.Name
}

// prepareNamespace gives a new namespace the "kubernetes" finalizer that
// the namespace controller removes once the namespace is empty (G.9);
// only the finalize subresource changes spec.finalizers afterwards.
func prepareNamespace(obj, old runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
	if old != nil {
		ns.Spec.Finalizers = old.(*corev1.Namespace).Spec.Finalizers
		return
	}
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
}

func resetNamespaceStatus(obj, old runtime.Object) {
	ns := obj.(*corev1.Namespace)
	if old == nil {
		ns.Status = corev1.NamespaceStatus{}
		return
	}
	ns.Status = old.(*corev1.Namespace).Status
}

func resetNodeStatus(obj, old runtime.Object) {
	if old == nil {
		return // a node registers with its status, as kubelets do
	}
	obj.(*corev1.Node).Status = old.(*corev1.Node).Status
}

// defaultSecret defaults the type and folds stringData into data (D.6), as
// decoding does in kube-apiserver: kube never stores stringData, its keys
// overwrite data's, and a read shows them base64-encoded under data like
// the rest.
func defaultSecret(obj runtime.Object) {
	s := obj.(*corev1.Secret)
	if s.Type == "" {
		s.Type = corev1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = make(map[string][]byte, len(s.StringData))
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

// DefaultPodSpec fills the defaults kube gives every pod spec, a pod's and
// a pod template's alike (its SetDefaults_PodSpec and the container
// defaults), for the apps kinds built into apiserver; the core group's
// kinds and batch's take the same from apiserver/registry/core.
func DefaultPodSpec(s *corev1.PodSpec) {
	// serviceAccount is the deprecated name of serviceAccountName; kube
	// keeps the two equal, the new name winning.
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = s.DeprecatedServiceAccount
	}
	s.DeprecatedServiceAccount = s.ServiceAccountName
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	if s.TerminationGracePeriodSeconds == nil {
		g := int64(corev1.DefaultTerminationGracePeriodSeconds)
		s.TerminationGracePeriodSeconds = &g
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			defaultContainer(&cs[i])
		}
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if img := c.Image; !strings.Contains(img[strings.LastIndex(img, "/")+1:], ":") || strings.HasSuffix(img, ":latest") {
			if !strings.Contains(img, "@") {
				c.ImagePullPolicy = corev1.PullAlways
			}
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		defaultProbe(p)
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

// defaultProbe fills kube's probe defaults (D.5): a 1 s timeout, a 10 s
// period, success after 1 and failure after 3 results.
func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	for _, d := range []struct {
		v   *int32
		def int32
	}{{&p.TimeoutSeconds, 1}, {&p.PeriodSeconds, 10}, {&p.SuccessThreshold, 1}, {&p.FailureThreshold, 3}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	defaultHTTPGet(p.HTTPGet)
}

// defaultHTTPGet defaults an HTTP check to GET / over HTTP.
func defaultHTTPGet(g *corev1.HTTPGetAction) {
	if g == nil {
		return
	}
	if g.Path == "" {
		g.Path = "/"
	}
	if g.Scheme == "" {
		g.Scheme = corev1.URISchemeHTTP
	}
}
