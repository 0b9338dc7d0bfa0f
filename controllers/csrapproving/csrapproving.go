// Package csrapproving is kube-controller-manager's CSR approver: it
// approves the kubelet client certificate requests whose requester a
// SubjectAccessReview allows to create certificatesigningrequests/
// selfnodeclient (a node renewing its own certificate) or
// certificatesigningrequests/nodeclient (a node bootstrapping), and
// leaves every other request to a person (docs/kubernetes-behaviour.md
// H.4).
//
// The identity it runs as needs: certificatesigningrequests get, list,
// watch; certificatesigningrequests/approval update; approve on the
// signer kubernetes.io/kube-apiserver-client-kubelet; subjectaccessreviews
// create (kube's system:controller:certificate-controller role).
package csrapproving

import (
	"context"
	"fmt"
	"log/slog"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/ca"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/csrsigning"
	"github.com/kubegate/kubegate/internal/csrpem"
)

// Name is the controller's name in kube-controller-manager's
// --controllers flag; it runs as the same service account as the signer.
const Name = "csrapproving"

// The Approved condition the approver writes.
const (
	ReasonAutoApproved = "AutoApproved"
	MessageSelfNode    = "Auto approving self kubelet client certificate after SubjectAccessReview."
	MessageNode        = "Auto approving kubelet client certificate after SubjectAccessReview."
)

// workers is how many requests are reviewed at once.
const workers = 2

// Descriptor runs the approver in the controller manager.
var Descriptor = controllers.Descriptor{Name: Name, ServiceAccount: csrsigning.ServiceAccount,
	New: func(c *controllers.Context) (controllers.Controller, error) { return New(c) }}

// recognizer is one kind of request the approver approves: those that
// match, from a requester allowed the subresource.
type recognizer struct {
	subresource string
	message     string
	match       func(csr *certificatesv1.CertificateSigningRequest, cn string) bool
}

// recognizers are tried in order: renewal first, then bootstrap.
var recognizers = []recognizer{
	{subresource: "selfnodeclient", message: MessageSelfNode,
		match: func(csr *certificatesv1.CertificateSigningRequest, cn string) bool { return csr.Spec.Username == cn }},
	{subresource: "nodeclient", message: MessageNode,
		match: func(*certificatesv1.CertificateSigningRequest, string) bool { return true }},
}

// Approver approves kubelet client certificate requests.
type Approver struct {
	client kubernetes.Interface
	log    *slog.Logger
	csrs   certificateslisters.CertificateSigningRequestLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New builds the approver from c.
func New(c *controllers.Context) (*Approver, error) {
	inf := c.Informers.Certificates().V1().CertificateSigningRequests()
	a := &Approver{client: c.Client, log: c.Logger, csrs: inf.Lister(), synced: inf.Informer().HasSynced,
		queue: controllers.NewQueue("certificate")}
	enqueue := func(obj any) { controllers.Enqueue(a.queue, obj) }
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
	}); err != nil {
		return nil, err
	}
	return a, nil
}

// Run works until ctx is done.
func (a *Approver) Run(ctx context.Context) error {
	return controllers.RunWorkers(ctx, Name, a.queue, workers, a.log, a.sync, a.synced)
}

// sync approves the request name when it is a kubelet client request,
// neither approved, denied nor issued yet, whose requester may create
// the subresource of the first recognizer that matches it. A request
// that matches but whose requester is not allowed is looked at again
// later, with the queue's backoff, since the requester may be given the
// permission.
func (a *Approver) sync(ctx context.Context, name string) error {
	csr, err := a.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(csr.Status.Certificate) > 0 || decided(csr) {
		return nil
	}
	req, err := csrpem.Parse(csr.Spec.Request)
	if err != nil {
		return fmt.Errorf("certificate signing request %s: %w", name, err)
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName ||
		csrsigning.CheckKubeletClient(req, csr.Spec.Usages) != nil || ca.CheckCSR(req) != nil {
		return nil
	}
	var tried []string
	for _, r := range recognizers {
		if !r.match(csr, req.Subject.CommonName) {
			continue
		}
		tried = append(tried, r.subresource)
		allowed, err := a.allowed(ctx, csr, r.subresource)
		if err != nil {
			return err
		}
		if !allowed {
			continue
		}
		csr = csr.DeepCopy()
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue,
			Reason: ReasonAutoApproved, Message: r.message,
		})
		if _, err := a.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("approve %s: %w", name, err)
		}
		a.log.Info("approved a kubelet client certificate signing request", "csr", name,
			"requester", csr.Spec.Username, "as", r.subresource)
		return nil
	}
	return controllers.Quiet(fmt.Errorf("recognized certificate signing request %s as %v but the subject access review did not allow it", name, tried))
}

// allowed asks the API server whether the requester of csr may create
// certificatesigningrequests/subresource.
func (a *Approver) allowed(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, subresource string) (bool, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(csr.Spec.Extra))
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: certificatesv1.GroupName, Version: "*",
			Resource: "certificatesigningrequests", Subresource: subresource, Verb: "create"},
	}}
	out, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subject access review of %s: %w", csr.Name, err)
	}
	return out.Status.Allowed, nil
}

// decided reports whether csr has an Approved or a Denied condition.
func decided(csr *certificatesv1.CertificateSigningRequest) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == certificatesv1.CertificateApproved || c.Type == certificatesv1.CertificateDenied {
			return true
		}
	}
	return false
}
