package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubegate/kubegate/authn/bootstrap"
)

// kubeadm's defaults for kubeadm token create.
const (
	// defaultBootstrapTTL is how long a new token lives.
	defaultBootstrapTTL = 24 * time.Hour
	// defaultBootstrapGroup is the group kubeadm gives node join tokens,
	// which its RBAC bindings let request and renew node certificates.
	defaultBootstrapGroup = "system:bootstrappers:kubeadm:default-node-token"
)

// bootstrapOnlyFlags are the flags of token create that need --bootstrap.
var bootstrapOnlyFlags = []string{"kubeconfig", "ttl", "groups", "usages", "description"}

// bootstrapTokenOptions are token create's flags for a bootstrap token
// (A.10).
type bootstrapTokenOptions struct {
	enabled     bool
	kubeconfig  string
	ttl         time.Duration
	groups      []string
	usages      []string
	description string
	now         func() time.Time
}

func (o *bootstrapTokenOptions) AddFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.enabled, "bootstrap", false, "create a bootstrap token in a running API server, as kubeadm token create does")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "with --bootstrap: kubeconfig of an identity that may create Secrets in kube-system")
	fs.DurationVar(&o.ttl, "ttl", defaultBootstrapTTL, "with --bootstrap: lifetime of the token; 0 means it never expires")
	fs.StringSliceVar(&o.groups, "groups", []string{defaultBootstrapGroup},
		"with --bootstrap: extra groups of the token, each matching "+bootstrap.GroupPattern)
	fs.StringSliceVar(&o.usages, "usages", slices.Clone(bootstrap.Usages),
		"with --bootstrap: what the token is for, among "+strings.Join(bootstrap.Usages, ","))
	fs.StringVar(&o.description, "description", "", "with --bootstrap: a note on what the token is for")
}

func (o *bootstrapTokenOptions) validate() error {
	if o.kubeconfig == "" {
		return errors.New("--kubeconfig is required with --bootstrap")
	}
	if o.ttl < 0 {
		return fmt.Errorf("--ttl %s: must not be negative (0 means never expires)", o.ttl)
	}
	for _, u := range o.usages {
		if !slices.Contains(bootstrap.Usages, u) {
			return fmt.Errorf("--usages: unknown usage %q (valid: %s)", u, strings.Join(bootstrap.Usages, ","))
		}
	}
	for _, g := range o.groups {
		if err := bootstrap.ValidateGroup(g); err != nil {
			return fmt.Errorf("--groups: %w", err)
		}
	}
	if len(o.groups) > 0 && !slices.Contains(o.usages, "authentication") {
		return errors.New(`--groups: token groups need --usages to include "authentication"`)
	}
	return nil
}

// runBootstrapTokenCreate creates a random bootstrap token's Secret in the
// API server o.kubeconfig names and prints the token.
func runBootstrapTokenCreate(ctx context.Context, o *bootstrapTokenOptions, s streams) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, err)
	}
	cfg.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("--kubeconfig %s: %w", o.kubeconfig, err)
	}
	id, secret, err := bootstrap.GenerateToken()
	if err != nil {
		return err
	}
	spec := bootstrap.TokenSpec{ID: id, Secret: secret, Description: o.description, Usages: o.usages, Groups: o.groups}
	if o.ttl > 0 {
		now := time.Now
		if o.now != nil {
			now = o.now
		}
		spec.Expires = now().Add(o.ttl)
	}
	obj := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstrap.SecretName(id), Namespace: bootstrap.Namespace},
		Type:       corev1.SecretType(bootstrap.SecretType),
		Data:       spec.Data(),
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if _, err := cs.CoreV1().Secrets(bootstrap.Namespace).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create secret %s/%s: %w", bootstrap.Namespace, obj.Name, err)
	}
	_, err = fmt.Fprintln(s.out, id+"."+secret)
	return err
}
