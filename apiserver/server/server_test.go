package server

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kubegate/kubegate/authz/bootstrap"
)

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	base := func() Options {
		o := Defaults()
		o.TLSCertFile, o.TLSKeyFile, o.DataDir = "c", "k", "d"
		return o
	}
	tests := []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"defaults with a cert and a data dir", func(*Options) {}, ""},
		{"etcd instead", func(o *Options) { o.DataDir, o.EtcdServers = "", []string{"https://e:2379"} }, ""},
		{"etcd certs without etcd", func(o *Options) { o.EtcdCAFile = "ca" }, "--etcd-cafile, --etcd-certfile and --etcd-keyfile need --etcd-servers"},
		{"etcd cert without key", func(o *Options) {
			o.DataDir, o.EtcdServers, o.EtcdCertFile = "", []string{"https://e:2379"}, "c"
		}, "--etcd-certfile and --etcd-keyfile go together"},
		{"no authenticator", func(o *Options) { o.AnonymousAuth = false }, "no authenticator configured"},
		{"keys without issuer", func(o *Options) { o.SAIssuers, o.SASigningKeyFile = nil, "sa.key" }, "--service-account-issuer is required"},
		{"bad port", func(o *Options) { o.SecurePort = 70000 }, "--secure-port 70000 is not a port number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			tt.change(&o)
			err := o.Validate()
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}

func TestPolicyGrantsTheGatewayLookups(t *testing.T) {
	t.Parallel()
	p := Policy()
	var role *rbacv1.ClusterRole
	for _, r := range p.ClusterRoles {
		if r.Name == GatewayLookupRole {
			role = r
		}
	}
	var bound bool
	for _, b := range p.ClusterRoleBindings {
		if b.Name == GatewayLookupRole && b.RoleRef.Name == GatewayLookupRole && len(b.Subjects) == 1 && b.Subjects[0].Name == bootstrap.GatewayUser {
			bound = true
		}
	}
	if role == nil || !bound {
		t.Fatalf("role %v, bound %v; want both", role, bound)
	}
	if got := strings.Join(role.Rules[0].Resources, ","); got != "serviceaccounts,secrets,pods,nodes" || strings.Join(role.Rules[0].Verbs, ",") != "get" {
		t.Fatalf("rules: got %+v", role.Rules)
	}
}
