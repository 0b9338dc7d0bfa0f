package authz

import "github.com/kubegate/kubegate/authn"

func testUser(name string, groups ...string) authn.User {
	return authn.User{Name: name, Groups: append(groups, authn.AllAuthenticated)}
}
