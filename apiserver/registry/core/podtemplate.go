package core

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The pod template that workloads of every group hold (ReplicationControllers
// here, the apps kinds, Jobs and CronJobs): the defaults of every pod spec,
// a template's validation and warnings, and its table cells.

// DefaultPodSpec fills the defaults kube gives every pod spec, a pod's and
// a pod template's alike (its SetDefaults_PodSpec and the container
// defaults).
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
	defaultEphemeralContainers(s)
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

const selectorMismatch = "`selector` does not match template `labels`"

// ValidatePodTemplate checks a pod template as kube's ValidatePodTemplateSpec
// does: its labels and annotations, its pod spec, no ephemeral containers.
func ValidatePodTemplate(t *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	errs := metav1validation.ValidateLabels(t.Labels, path.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, path.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&t.Spec, path.Child("spec"))...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(path.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// MatchesTemplate requires a non-empty selector to select the template's
// labels.
func MatchesTemplate(sel labels.Selector, t *corev1.PodTemplateSpec, path *field.Path) field.ErrorList {
	if sel.Empty() || sel.Matches(labels.Set(t.Labels)) {
		return nil
	}
	return field.ErrorList{field.Invalid(path.Child("metadata", "labels"), t.Labels, selectorMismatch)}
}

// KeepsPodsRunning requires what a controller that replaces its pods needs
// of their spec: restart policy Always and no active deadline. kind names
// the controller in kube's message.
func KeepsPodsRunning(s *corev1.PodSpec, kind string, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(specPath.Child("restartPolicy"), s.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if s.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(specPath.Child("activeDeadlineSeconds"), "activeDeadlineSeconds in "+kind+" is not Supported"))
	}
	return errs
}

// PodTemplateWarnings are kube's warnings about spec.template: a negative
// terminationGracePeriodSeconds, which a pod made from it gets as 1.
func PodTemplateWarnings(t *corev1.PodTemplateSpec) []string {
	if t == nil {
		return nil
	}
	var w []string
	if g := t.Spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		w = append(w, field.NewPath("spec", "template", "spec", "terminationGracePeriodSeconds").String()+
			": must be >= 0; negative values are invalid and will be treated as 1")
	}
	return w
}

// ContainersColumn and ImagesColumn are the wide columns of a pod
// template's container names and images, as ContainerCells fills them.
var (
	ContainersColumn = metav1.TableColumnDefinition{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."}
	ImagesColumn     = metav1.TableColumnDefinition{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."}
)

// ContainerCells lists the names and the images of containers, each joined
// with commas.
func ContainerCells(containers []corev1.Container) (names, images string) {
	var n, i []string
	for _, c := range containers {
		n = append(n, c.Name)
		i = append(i, c.Image)
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}
