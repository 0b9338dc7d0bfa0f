//go:build !unix

package requestheader_test

import "testing"

type cpuTimer struct{}

func startCPU() cpuTimer { return cpuTimer{} }

func (cpuTimer) report(*testing.B) {}
