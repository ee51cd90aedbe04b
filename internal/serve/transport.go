package serve

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/fullpipe/fullpipe/internal/wire"
)

// tlsHandshakeRecord is the first byte of a TLS connection; no fullpipe
// preamble starts with it.
const tlsHandshakeRecord = 0x16

// preamble reads a connection's preamble. On a responder with TLS, a
// connection that starts with a TLS handshake is a control connection
// inside TLS: preamble returns the TLS connection with the preamble read
// from inside it. Data connections are always plain TCP.
func (s *Server) preamble(c *net.TCPConn) (net.Conn, string, uint16, error) {
	// A read deadline only: a data connection keeps no write deadline
	// into its test (attachData clears the read one).
	_ = c.SetReadDeadline(time.Now().Add(handshakeTimeout))
	var first [1]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		return c, "", 0, err
	}
	if first[0] != tlsHandshakeRecord || s.cfg.TLS == nil {
		magic, version, err := wire.ReadPreamble(io.MultiReader(bytes.NewReader(first[:]), c))
		return c, magic, version, err
	}
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout)) // the handshake writes too; control resets it
	tc := tls.Server(&prefixConn{TCPConn: c, prefix: first[:]}, s.cfg.TLS)
	if err := tc.Handshake(); err != nil {
		return c, "", 0, fmt.Errorf("TLS handshake: %w", err)
	}
	magic, version, err := wire.ReadPreamble(tc)
	if err == nil && magic != wire.MagicControl {
		err = fmt.Errorf("a data connection inside TLS: data connections are plain TCP")
	}
	return tc, magic, version, err
}

// prefixConn is a TCP connection whose first bytes were already read.
type prefixConn struct {
	*net.TCPConn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.TCPConn.Read(b)
}
