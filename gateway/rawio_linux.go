package gateway

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawIO returns c with its reads and writes made as raw system calls,
// still waiting for readiness in Go's network poller, when c is a TCP
// connection; other connections are returned as they are.
//
// Go's net package enters every read and write on a socket as a system
// call that may block. When all of the process's goroutines have been
// waiting, the first such call wakes the runtime's monitor thread, which
// then polls every 20 µs for a millisecond or more before it sleeps again.
// A proxy under load goes idle and wakes thousands of times a second, so
// that cycle costs it about a sixth of its CPU and doubles its context
// switches. Reads and writes on a non-blocking socket never block, so
// they need none of it.
func rawIO(c net.Conn) net.Conn {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return c
	}
	return &rawConn{Conn: tc, rc: rc}
}

// rawConn is a TCP connection read and written with raw system calls. It
// embeds net.Conn, not *net.TCPConn, so that no method of the TCP
// connection (ReadFrom, WriteTo) bypasses Read and Write.
type rawConn struct {
	net.Conn // a *net.TCPConn
	rc       syscall.RawConn
}

func (c *rawConn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno syscall.Errno
	err := c.rc.Read(func(fd uintptr) bool {
		for {
			r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
			switch e {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				return false // wait until readable
			}
			n, errno = int(r), e
			return true
		}
	})
	switch {
	case err != nil: // a deadline, or the connection was closed
		return 0, err
	case errno != 0:
		return 0, c.opError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

func (c *rawConn) Write(p []byte) (int, error) {
	n := 0
	var errno syscall.Errno
	err := c.rc.Write(func(fd uintptr) bool {
		for n < len(p) {
			// send with MSG_NOSIGNAL: a peer that has gone is an EPIPE
			// error, never a SIGPIPE.
			r, _, e := syscall.RawSyscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&p[n])), uintptr(len(p)-n), syscall.MSG_NOSIGNAL, 0, 0)
			switch e {
			case 0:
				n += int(r)
			case syscall.EINTR:
			case syscall.EAGAIN:
				return false // wait until writable
			default:
				errno = e
				return true
			}
		}
		return true
	})
	switch {
	case err != nil:
		return n, err
	case errno != 0:
		return n, c.opError("write", errno)
	}
	return n, nil
}

// CloseWrite shuts down the writing side, as *net.TCPConn does.
func (c *rawConn) CloseWrite() error { return c.Conn.(*net.TCPConn).CloseWrite() }

func (c *rawConn) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}
