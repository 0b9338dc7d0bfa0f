package rbac

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kubegate/kubegate/authn"
	rbacv1 "k8s.io/api/rbac/v1"
)

// Objects is a complete set of RBAC objects.
type Objects struct {
	Roles               []*rbacv1.Role
	ClusterRoles        []*rbacv1.ClusterRole
	RoleBindings        []*rbacv1.RoleBinding
	ClusterRoleBindings []*rbacv1.ClusterRoleBinding
}

// Memory is an in-memory RuleSource, safe for concurrent use. Reads use an
// immutable snapshot in which bindings are indexed by subject, so a check
// looks only at the bindings that can name the user. Writes (Replace, the
// Set and Delete methods) are cheap; the snapshot is rebuilt once, on the
// first read after them, so loading many objects costs one rebuild.
//
// Memory keeps the pointers it is given: callers must not modify an
// object after handing it over (hand over a copy instead). The zero value
// is an empty source.
type Memory struct {
	mu      sync.Mutex
	objects objectMaps
	snap    atomic.Pointer[snapshot] // nil after a write
}

var _ RuleSource = (*Memory)(nil)

// NewMemory returns a Memory holding objs.
func NewMemory(objs Objects) *Memory {
	m := &Memory{}
	m.Replace(objs)
	return m
}

type nsName struct{ namespace, name string }

type objectMaps struct {
	roles               map[nsName]*rbacv1.Role
	clusterRoles        map[string]*rbacv1.ClusterRole
	roleBindings        map[nsName]*rbacv1.RoleBinding
	clusterRoleBindings map[string]*rbacv1.ClusterRoleBinding
}

func (o *objectMaps) init() {
	if o.roles == nil {
		o.roles = map[nsName]*rbacv1.Role{}
		o.clusterRoles = map[string]*rbacv1.ClusterRole{}
		o.roleBindings = map[nsName]*rbacv1.RoleBinding{}
		o.clusterRoleBindings = map[string]*rbacv1.ClusterRoleBinding{}
	}
}

// Replace atomically replaces every object Memory holds with objs. Objects
// with the same namespace and name replace each other, the last winning.
func (m *Memory) Replace(objs Objects) {
	var o objectMaps
	o.init()
	for _, r := range objs.Roles {
		o.roles[nsName{r.Namespace, r.Name}] = r
	}
	for _, r := range objs.ClusterRoles {
		o.clusterRoles[r.Name] = r
	}
	for _, b := range objs.RoleBindings {
		o.roleBindings[nsName{b.Namespace, b.Name}] = b
	}
	for _, b := range objs.ClusterRoleBindings {
		o.clusterRoleBindings[b.Name] = b
	}
	m.mu.Lock()
	m.objects = o
	m.snap.Store(nil)
	m.mu.Unlock()
}

// update runs f on the objects under the lock and invalidates the snapshot.
func (m *Memory) update(f func(o *objectMaps)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects.init()
	f(&m.objects)
	m.snap.Store(nil)
}

// SetRole adds or replaces r.
func (m *Memory) SetRole(r *rbacv1.Role) {
	m.update(func(o *objectMaps) { o.roles[nsName{r.Namespace, r.Name}] = r })
}

// DeleteRole removes the role namespace/name, if present.
func (m *Memory) DeleteRole(namespace, name string) {
	m.update(func(o *objectMaps) { delete(o.roles, nsName{namespace, name}) })
}

// SetClusterRole adds or replaces r.
func (m *Memory) SetClusterRole(r *rbacv1.ClusterRole) {
	m.update(func(o *objectMaps) { o.clusterRoles[r.Name] = r })
}

// DeleteClusterRole removes the cluster role name, if present.
func (m *Memory) DeleteClusterRole(name string) {
	m.update(func(o *objectMaps) { delete(o.clusterRoles, name) })
}

// SetRoleBinding adds or replaces b.
func (m *Memory) SetRoleBinding(b *rbacv1.RoleBinding) {
	m.update(func(o *objectMaps) { o.roleBindings[nsName{b.Namespace, b.Name}] = b })
}

// DeleteRoleBinding removes the role binding namespace/name, if present.
func (m *Memory) DeleteRoleBinding(namespace, name string) {
	m.update(func(o *objectMaps) { delete(o.roleBindings, nsName{namespace, name}) })
}

// SetClusterRoleBinding adds or replaces b.
func (m *Memory) SetClusterRoleBinding(b *rbacv1.ClusterRoleBinding) {
	m.update(func(o *objectMaps) { o.clusterRoleBindings[b.Name] = b })
}

// DeleteClusterRoleBinding removes the cluster role binding name, if present.
func (m *Memory) DeleteClusterRoleBinding(name string) {
	m.update(func(o *objectMaps) { delete(o.clusterRoleBindings, name) })
}

// ListClusterRoleBindings returns, in name order, the cluster role
// bindings with a subject that can name u: u's user name (a
// ServiceAccount subject matches its system:serviceaccount:NS:NAME name)
// or one of u's groups.
func (m *Memory) ListClusterRoleBindings(u authn.User) ([]*rbacv1.ClusterRoleBinding, error) {
	s := m.snapshot()
	return lookup(s.clusterBindings, func(k subjectKey) subjectKey { return k }, u), nil
}

// ListRoleBindings returns, in name order, the role bindings in namespace
// with a subject that can name u (see ListClusterRoleBindings; a
// ServiceAccount subject without a namespace means one in namespace).
func (m *Memory) ListRoleBindings(namespace string, u authn.User) ([]*rbacv1.RoleBinding, error) {
	s := m.snapshot()
	return lookup(s.bindings, func(k subjectKey) nsSubjectKey { return nsSubjectKey{namespace, k} }, u), nil
}

// GetRole returns the role namespace/name or NotFoundError.
func (m *Memory) GetRole(namespace, name string) (*rbacv1.Role, error) {
	if r, ok := m.snapshot().roles[nsName{namespace, name}]; ok {
		return r, nil
	}
	return nil, NotFoundError("role", name)
}

// GetClusterRole returns the cluster role name, an aggregated one without
// stored rules with the rules it gathers (see Aggregate), or
// NotFoundError.
func (m *Memory) GetClusterRole(name string) (*rbacv1.ClusterRole, error) {
	if r, ok := m.snapshot().clusterRoles[name]; ok {
		return r, nil
	}
	return nil, NotFoundError("clusterrole", name)
}

// Objects returns the objects Memory holds, each kind sorted by namespace
// and name. Cluster roles are as they were given, not aggregated.
func (m *Memory) Objects() Objects {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.objects
	var out Objects
	for _, r := range o.roles {
		out.Roles = append(out.Roles, r)
	}
	for _, r := range o.clusterRoles {
		out.ClusterRoles = append(out.ClusterRoles, r)
	}
	for _, b := range o.roleBindings {
		out.RoleBindings = append(out.RoleBindings, b)
	}
	for _, b := range o.clusterRoleBindings {
		out.ClusterRoleBindings = append(out.ClusterRoleBindings, b)
	}
	slices.SortFunc(out.Roles, func(a, b *rbacv1.Role) int { return cmpNsName(a.Namespace, a.Name, b.Namespace, b.Name) })
	slices.SortFunc(out.ClusterRoles, func(a, b *rbacv1.ClusterRole) int { return cmp.Compare(a.Name, b.Name) })
	slices.SortFunc(out.RoleBindings, func(a, b *rbacv1.RoleBinding) int { return cmpNsName(a.Namespace, a.Name, b.Namespace, b.Name) })
	slices.SortFunc(out.ClusterRoleBindings, func(a, b *rbacv1.ClusterRoleBinding) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func cmpNsName(ans, an, bns, bn string) int {
	if c := cmp.Compare(ans, bns); c != 0 {
		return c
	}
	return cmp.Compare(an, bn)
}

// subjectKey identifies who a binding subject names: a user name
// (service accounts included, by their user name) or a group.
type subjectKey struct {
	group bool
	name  string
}

type nsSubjectKey struct {
	namespace string
	subjectKey
}

// bindingList is the bindings indexed under one key, in name order, with
// each one's position in that order, so that lookups over several keys
// merge them into one stable order.
type bindingList[B any] struct {
	ords  []int
	items []B
}

func (l *bindingList[B]) add(ord int, b B) {
	// A binding naming the same subject twice is indexed once.
	if n := len(l.ords); n > 0 && l.ords[n-1] == ord {
		return
	}
	l.ords = append(l.ords, ord)
	l.items = append(l.items, b)
}

// snapshot is an immutable, indexed view of the objects.
type snapshot struct {
	roles           map[nsName]*rbacv1.Role
	clusterRoles    map[string]*rbacv1.ClusterRole
	clusterBindings map[subjectKey]*bindingList[*rbacv1.ClusterRoleBinding]
	bindings        map[nsSubjectKey]*bindingList[*rbacv1.RoleBinding]
}

func (m *Memory) snapshot() *snapshot {
	if s := m.snap.Load(); s != nil {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.snap.Load(); s != nil {
		return s
	}
	s := buildSnapshot(&m.objects)
	m.snap.Store(s)
	return s
}

func buildSnapshot(o *objectMaps) *snapshot {
	s := &snapshot{
		roles:           make(map[nsName]*rbacv1.Role, len(o.roles)),
		clusterRoles:    make(map[string]*rbacv1.ClusterRole, len(o.clusterRoles)),
		clusterBindings: map[subjectKey]*bindingList[*rbacv1.ClusterRoleBinding]{},
		bindings:        map[nsSubjectKey]*bindingList[*rbacv1.RoleBinding]{},
	}
	for k, r := range o.roles {
		s.roles[k] = r
	}
	all := make([]*rbacv1.ClusterRole, 0, len(o.clusterRoles))
	for _, r := range o.clusterRoles {
		all = append(all, r)
	}
	for _, r := range Aggregate(all) {
		s.clusterRoles[r.Name] = r
	}

	crbs := make([]*rbacv1.ClusterRoleBinding, 0, len(o.clusterRoleBindings))
	for _, b := range o.clusterRoleBindings {
		crbs = append(crbs, b)
	}
	slices.SortFunc(crbs, func(a, b *rbacv1.ClusterRoleBinding) int { return cmp.Compare(a.Name, b.Name) })
	for i, b := range crbs {
		for _, k := range subjectKeys(b.Subjects, "") {
			listFor(s.clusterBindings, k).add(i, b)
		}
	}

	rbs := make([]*rbacv1.RoleBinding, 0, len(o.roleBindings))
	for _, b := range o.roleBindings {
		rbs = append(rbs, b)
	}
	slices.SortFunc(rbs, func(a, b *rbacv1.RoleBinding) int { return cmpNsName(a.Namespace, a.Name, b.Namespace, b.Name) })
	for i, b := range rbs {
		for _, k := range subjectKeys(b.Subjects, b.Namespace) {
			listFor(s.bindings, nsSubjectKey{b.Namespace, k}).add(i, b)
		}
	}
	return s
}

func listFor[K comparable, B any](index map[K]*bindingList[B], k K) *bindingList[B] {
	l := index[k]
	if l == nil {
		l = &bindingList[B]{}
		index[k] = l
	}
	return l
}

// subjectKeys returns the index keys of subjects; namespace is the
// binding's namespace ("" for a cluster role binding), which a
// ServiceAccount subject without a namespace defaults to. Subjects that
// can never match (an unknown kind, a service account with no namespace
// at all) get no key.
func subjectKeys(subjects []rbacv1.Subject, namespace string) []subjectKey {
	keys := make([]subjectKey, 0, len(subjects))
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.UserKind:
			keys = append(keys, subjectKey{name: s.Name})
		case rbacv1.GroupKind:
			keys = append(keys, subjectKey{group: true, name: s.Name})
		case rbacv1.ServiceAccountKind:
			ns := s.Namespace
			if ns == "" {
				ns = namespace
			}
			if ns != "" {
				keys = append(keys, subjectKey{name: serviceAccountUser(ns, s.Name)})
			}
		}
	}
	return keys
}

// lookup returns the bindings indexed under u's name or any of u's groups,
// in name order and without duplicates. With a single matching key it
// returns the index's own slice.
func lookup[K comparable, B any](index map[K]*bindingList[B], key func(subjectKey) K, u authn.User) []B {
	var buf [8]*bindingList[B]
	lists := buf[:0]
	total := 0
	if l := index[key(subjectKey{name: u.Name})]; l != nil {
		lists = append(lists, l)
		total += len(l.items)
	}
	for _, g := range u.Groups {
		if l := index[key(subjectKey{group: true, name: g})]; l != nil {
			lists = append(lists, l)
			total += len(l.items)
		}
	}
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return lists[0].items
	}
	// Merge the sorted lists, dropping a binding reached through two keys.
	out := make([]B, 0, total)
	var posBuf [8]int
	pos := posBuf[:0]
	if len(lists) > len(posBuf) {
		pos = make([]int, 0, len(lists))
	}
	pos = pos[:len(lists)]
	last := -1
	for {
		best := -1
		for i, l := range lists {
			if pos[i] < len(l.ords) && (best < 0 || l.ords[pos[i]] < lists[best].ords[pos[best]]) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		ord := lists[best].ords[pos[best]]
		if ord != last {
			out = append(out, lists[best].items[pos[best]])
			last = ord
		}
		pos[best]++
	}
}
