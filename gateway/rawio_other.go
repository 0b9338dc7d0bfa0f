//go:build !linux

package gateway

import "net"

// rawIO returns c: raw reads and writes are made on Linux only.
func rawIO(c net.Conn) net.Conn { return c }
