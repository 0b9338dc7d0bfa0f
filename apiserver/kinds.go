package apiserver

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Kind-specific behaviour of the built-in resources: selectable fields,
// server-side defaults, validation and status handling.

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
