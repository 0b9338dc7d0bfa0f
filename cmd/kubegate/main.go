// Command kubegate issues a cluster's PKI, authenticates requests the way
// kube-apiserver does, and runs a small Kubernetes-compatible control plane.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// exitError carries a specific exit code; its message has already been
// printed (or there is none to print).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes kubegate with args and returns the process exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(streams{in: stdin, out: stdout, err: stderr})
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "kubegate: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "kubegate: %v\n", err)
	return 1
}
