//go:build !linux

package fsutil

import (
	"io/fs"
	"os"
)

// syncAll makes the named files durable by fsyncing each.
func syncAll(_ *os.File, names []string) error { return fsyncEach(names) }

// umask is not known here: 0o777 makes createTemp set every mode
// explicitly.
func umask() fs.FileMode { return 0o777 }
