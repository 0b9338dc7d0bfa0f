package apiserver

import (
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
)

// The resources of apiserver/registry that the server itself or the
// admission plugins read or write by their storage keys.
var (
	// PriorityClassesGVR is where priority classes are served
	// (apiserver/registry/scheduling); the Priority admission plugin and
	// the server's Lister read them (D.11).
	PriorityClassesGVR = schedulingv1.SchemeGroupVersion.WithResource("priorityclasses")
	// CertificateSigningRequestsGVR is where certificate signing requests
	// are served (apiserver/registry/certificates); the certificate
	// admission plugins check writes to them.
	CertificateSigningRequestsGVR = certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests")
	// JobsGVR is where Jobs are served (apiserver/registry/batch); a
	// Job's deletion without a propagation policy orphans its pods.
	JobsGVR = batchv1.SchemeGroupVersion.WithResource("jobs")
	// LimitRangesGVR is where limit ranges are served
	// (apiserver/registry/core); the LimitRanger admission plugin reads
	// them through the server's Lister (D.8).
	LimitRangesGVR = corev1.SchemeGroupVersion.WithResource("limitranges")
	// ServiceCIDRsGVR is where service CIDRs are served
	// (apiserver/registry/networking); the server creates the default
	// one, "kubernetes", from its service cluster IP range (D.19).
	ServiceCIDRsGVR = networkingv1.SchemeGroupVersion.WithResource("servicecidrs")
	// IPAddressesGVR is where IP addresses are served
	// (apiserver/registry/networking).
	IPAddressesGVR = networkingv1.SchemeGroupVersion.WithResource("ipaddresses")
)
