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

// preamble reads a connection's preamble, all of it within
// preambleTimeout (2 s) of accept, a TLS handshake included. On a
// responder with TLS, a connection that starts with a TLS handshake is a
// control connection inside TLS: preamble returns the TLS connection with
// the preamble read from inside it, otherwise c itself. Data connections
// are always plain TCP. c is a *net.TCPConn but for the fuzz target's
// in-memory pipes.
func (s *Server) preamble(c net.Conn) (net.Conn, string, uint16, error) {
	// A read deadline only: a data connection keeps no write deadline
	// into its test (attachData clears the read one once its data frame
	// is in, also read within this deadline).
	deadline := time.Now().Add(preambleTimeout)
	_ = c.SetReadDeadline(deadline)
	var first [1]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		return c, "", 0, err
	}
	if first[0] != tlsHandshakeRecord || s.cfg.TLS == nil {
		magic, version, err := wire.ReadPreamble(io.MultiReader(bytes.NewReader(first[:]), c))
		return c, magic, version, err
	}
	_ = c.SetDeadline(deadline) // the handshake writes too; control resets it
	tc := tls.Server(&prefixConn{Conn: c, prefix: first[:]}, s.cfg.TLS)
	if err := tc.Handshake(); err != nil {
		return c, "", 0, fmt.Errorf("TLS handshake: %w", err)
	}
	magic, version, err := wire.ReadPreamble(tc)
	if err == nil && magic != wire.MagicControl {
		err = fmt.Errorf("a data connection inside TLS: data connections are plain TCP")
	}
	return tc, magic, version, err
}

// prefixConn is a connection whose first bytes were already read.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}
