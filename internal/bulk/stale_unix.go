//go:build unix

package bulk

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// peerSpoke reports whether the peer has sent anything on an idle
// connection, or closed it: bytes waiting to be read (a 408 a server sends
// as it closes a kept connection, or anything else no request asked for)
// or EOF or an error. It looks without reading or blocking (MSG_PEEK,
// MSG_DONTWAIT: one system call).
func peerSpoke(c net.Conn) bool {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn() // a TLS record (a close_notify alert) counts too
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	spoke := false
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case errors.Is(rerr, syscall.EAGAIN), errors.Is(rerr, syscall.EWOULDBLOCK), errors.Is(rerr, syscall.EINTR):
			// nothing to read: the connection is as it was left
		default:
			spoke = rerr != nil || n >= 0 // an error, bytes, or EOF (n == 0)
		}
		return true // never wait
	})
	return spoke || err != nil
}
