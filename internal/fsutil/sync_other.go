//go:build !linux

package fsutil

import "os"

// syncAll makes the named files durable by fsyncing each.
func syncAll(_ *os.File, names []string) error { return fsyncEach(names) }
