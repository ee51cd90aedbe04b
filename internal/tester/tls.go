package tester

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"net"

	"github.com/fullpipe/fullpipe/internal/wire"
)

// PinError says the responder's certificate is not the pinned one.
type PinError struct{ Got, Want string }

func (e *PinError) Error() string {
	return fmt.Sprintf("the responder's certificate is %s, not the pinned %s: another host answers, or its certificate changed; check --tls-pin with its operator", e.Got, e.Want)
}

// tlsConfig is the client's TLS configuration for host: pinned to a
// certificate's SHA-256 when the target has a pin, else verified against
// the system's roots for host.
func (t Target) tlsConfig(host string) *tls.Config {
	cfg := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS13}
	if t.TLSPin == nil {
		return cfg
	}
	want := bytes.Clone(t.TLSPin)
	// Pinning replaces chain verification: the pin names the one
	// certificate to accept, self-signed or not.
	cfg.InsecureSkipVerify = true
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("the responder sent no certificate")
		}
		got := sha256.Sum256(cs.PeerCertificates[0].Raw)
		if !bytes.Equal(got[:], want) {
			return &PinError{Got: wire.Fingerprint(cs.PeerCertificates[0].Raw), Want: fmt.Sprintf("sha256:%x", want)}
		}
		return nil
	}
	return cfg
}

// startTLS runs the TLS handshake on the control connection c, within
// the handshake timeout.
func (s *session) startTLS(ctx context.Context, c net.Conn) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(s.addr)
	tc := tls.Client(c, s.target.tlsConfig(host))
	hctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		var pe *PinError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: TLS: %w", s.addr, pe)
		}
		return nil, fmt.Errorf("%s: TLS handshake failed (%w): is the responder started with --tls-cert and --tls-key, and is --tls-pin its fingerprint?", s.addr, err)
	}
	return tc, nil
}
