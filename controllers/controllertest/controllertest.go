// Package controllertest runs controllers for tests: an in-process API
// server (apiserver/apiservertest) and the manager running the controllers
// against it until the test ends.
//
// It imports controllers/manager, which imports every controller, so
// only a controller's external test package (package foo_test) can use
// it.
package controllertest

import (
	"context"
	"testing"

	"github.com/kubegate/kubegate/apiserver/apiservertest"
	"github.com/kubegate/kubegate/controllers"
	"github.com/kubegate/kubegate/controllers/manager"
)

// Start starts an API server and runs the controllers descs describe
// against it until the test ends.
func Start(t testing.TB, descs ...controllers.Descriptor) *apiservertest.Server {
	t.Helper()
	return StartWith(t, manager.Options{Descriptors: descs})
}

// StartWith is Start with the manager's options o: its descriptors, and
// its logger, clock or root CA when a test needs them. o.Config is the
// server's.
func StartWith(t testing.TB, o manager.Options) *apiservertest.Server {
	t.Helper()
	s := apiservertest.Start(t)
	Run(t, s, o)
	return s
}

// Run runs the manager with o against s, already started, until the test
// ends. o.Config is s's.
func Run(t testing.TB, s *apiservertest.Server, o manager.Options) {
	t.Helper()
	o.Config = s.Config
	apiservertest.Run(t, func(ctx context.Context) error { return manager.Run(ctx, o) })
}
