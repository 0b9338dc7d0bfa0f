// Package clusterroleaggregation is kube-controller-manager's ClusterRole
// aggregation controller: a ClusterRole with an aggregationRule (admin,
// edit and view among the defaults) is stored with the rules of the
// ClusterRoles its selectors match, so that what it grants can be read
// from the object (docs/kubernetes-behaviour.md G.18).
//
// The rules are gathered selector by selector; for each, the matching
// ClusterRoles in name order, the role itself left out; each rule that is
// not yet among those gathered (compared field by field, a nil list equal
// to an empty one) is added in the order its role lists it. The role's
// own rules are replaced by those, with a server-side apply of the rules
// alone as field manager clusterrole-aggregation-controller, forcing
// conflicts; nothing is written when the stored rules are already equal.
// Any change to any ClusterRole looks at every aggregated one again, so
// that roles aggregating aggregated roles (admin gathers edit, which
// gathers view) settle.
//
// The identity it runs as needs: clusterroles list, watch, patch and
// escalate (kube's system:controller:clusterrole-aggregation-controller
// role).
package clusterroleaggregation

import (
	"cmp"
	"context"
	"log/slog"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubegate/kubegate/authz/rbac"
	"github.com/kubegate/kubegate/controllers"
)

// Name is the controller's name in kube-controller-manager's
// --controllers flag, ServiceAccount the one it runs as, and FieldManager
// the field manager of its writes.
const (
	Name           = "clusterrole-aggregation"
	ServiceAccount = "clusterrole-aggregation-controller"
	FieldManager   = "clusterrole-aggregation-controller"
)

// workers is how many roles are brought in step at once, as in kube.
const workers = 5

// Descriptor runs the controller in the controller manager.
var Descriptor = controllers.Descriptor{Name: Name, ServiceAccount: ServiceAccount,
	New: func(c *controllers.Context) (controllers.Controller, error) { return New(c) }}

// Controller keeps the rules of aggregated ClusterRoles.
type Controller struct {
	client kubernetes.Interface
	log    *slog.Logger
	roles  rbaclisters.ClusterRoleLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller from c.
func New(c *controllers.Context) (*Controller, error) {
	inf := c.Informers.Rbac().V1().ClusterRoles()
	ctl := &Controller{client: c.Client, log: c.Logger, roles: inf.Lister(), synced: inf.Informer().HasSynced,
		queue: controllers.NewQueue("ClusterRoleAggregator")}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { ctl.enqueueAggregated() },
		UpdateFunc: func(_, _ any) { ctl.enqueueAggregated() },
		DeleteFunc: func(any) { ctl.enqueueAggregated() },
	}); err != nil {
		return nil, err
	}
	return ctl, nil
}

// Run works until ctx is done.
func (c *Controller) Run(ctx context.Context) error {
	return controllers.RunWorkers(ctx, Name, c.queue, workers, c.log, c.sync, c.synced)
}

// enqueueAggregated queues every ClusterRole with an aggregationRule: which
// of them a change concerns is not known, and there are few.
func (c *Controller) enqueueAggregated() {
	all, err := c.roles.List(labels.Everything())
	if err != nil {
		c.log.Error("list cluster roles", "err", err)
		return
	}
	for _, r := range all {
		if r.AggregationRule != nil {
			c.queue.Add(r.Name)
		}
	}
}

// sync brings the rules of the ClusterRole name in step with the roles
// its aggregationRule selects.
func (c *Controller) sync(ctx context.Context, name string) error {
	role, err := c.roles.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if role.AggregationRule == nil {
		return nil
	}
	all, err := c.roles.List(labels.Everything())
	if err != nil {
		return err
	}
	rules, err := Rules(role, all)
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(rules, role.Rules) {
		return nil
	}
	apply := rbacv1ac.ClusterRole(name)
	for _, r := range rules {
		rule := rbacv1ac.PolicyRule()
		rule.Verbs, rule.APIGroups, rule.Resources, rule.ResourceNames, rule.NonResourceURLs =
			r.Verbs, r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs
		apply.WithRules(rule)
	}
	if _, err := c.client.RbacV1().ClusterRoles().Apply(ctx, apply, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
		return err
	}
	c.log.Info("aggregated the rules of a cluster role", "clusterrole", name, "rules", len(rules))
	return nil
}

// Rules returns the rules role's aggregationRule gathers from roles (the
// stored rules of each, not gathered again): for each selector in turn,
// the roles it matches in name order, role itself left out, and of their
// rules each one not already gathered. A selector that does not parse is
// an error. The result is never nil.
func Rules(role *rbacv1.ClusterRole, roles []*rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	rules := []rbacv1.PolicyRule{}
	if role.AggregationRule == nil {
		return rules, nil
	}
	seen := map[string]bool{}
	sorted := slices.Clone(roles)
	slices.SortStableFunc(sorted, func(a, b *rbacv1.ClusterRole) int { return cmp.Compare(a.Name, b.Name) })
	for i := range role.AggregationRule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&role.AggregationRule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, err
		}
		for _, other := range sorted {
			if other.Name == role.Name || !sel.Matches(labels.Set(other.Labels)) {
				continue
			}
			for _, rule := range other.Rules {
				if k := rbac.RuleKey(rule); !seen[k] {
					seen[k] = true
					rules = append(rules, rule)
				}
			}
		}
	}
	return rules, nil
}
