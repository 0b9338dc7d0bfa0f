package gateway

import (
	"fmt"

	"github.com/kubegate/kubegate/authn"
	"github.com/kubegate/kubegate/internal/names"
)

// forwardable reports why u cannot be forwarded: a user name, UID, group
// or extra value that an identity header would not carry unchanged (see
// package names), so that the upstream would act for a different
// identity than the one verified. Extra keys need no check: they are
// percent-encoded on the way.
func forwardable(u *authn.User) error {
	check := func(what, v string) error {
		if p := names.Problem(v); p != "" {
			return fmt.Errorf("%s %q %s: identity headers would not carry it unchanged", what, v, p)
		}
		return nil
	}
	if err := check("user name", u.Name); err != nil {
		return err
	}
	if err := check("UID", u.UID); err != nil {
		return err
	}
	for _, g := range u.Groups {
		if err := check("group", g); err != nil {
			return err
		}
	}
	for k, vs := range u.Extra {
		for _, v := range vs {
			if err := check("extra "+k+" value", v); err != nil {
				return err
			}
		}
	}
	return nil
}
