package agent

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/certs"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// Files of the responder's self-signed certificate in the state dir.
const (
	certFile = "responder.crt"
	keyFile  = "responder.key"
	// certValidity: peers pin the certificate itself, so its dates only
	// need to outlive the agent's install.
	certValidity = 20 * 365 * 24 * time.Hour
)

// responderCert loads the responder's certificate from dir, or makes a
// self-signed one (ECDSA P-256) and keeps it there, so that its pin
// stays the same across restarts.
func responderCert(dir, name string) (tls.Certificate, error) {
	cp, kp := filepath.Join(dir, certFile), filepath.Join(dir, keyFile)
	cert, err := tls.LoadX509KeyPair(cp, kp)
	if err == nil {
		return cert, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return cert, fmt.Errorf("responder certificate in %s: %w (delete both files to make a new one; peers learn its pin at the next registration)", dir, err)
	}
	certPEM, keyPEM, err := certs.SelfSigned("fullpipe agent "+name, nil, time.Now(), certValidity)
	if err != nil {
		return cert, err
	}
	// The key first: a crash between the two leaves no certificate, and
	// the next start makes a new pair.
	if err := writeFile(kp, keyPEM, 0o600); err != nil {
		return cert, err
	}
	if err := writeFile(cp, certPEM, 0o644); err != nil {
		return cert, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// writeFile writes b to path atomically and durably.
func writeFile(path string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), tmpPrefix)
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	return err
}

// certPin is a certificate's pin as the fleet's documents carry it: the
// lower-case hex SHA-256 of its DER bytes (Registration.ResponderPin).
func certPin(cert tls.Certificate) string { return certs.Pin(cert.Certificate[0]) }

// parsePin reads an assignment's TargetPin: hex, or "sha256:HEX" as the
// CLI spells it; "" is no TLS.
func parsePin(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(s)), "sha256:") {
		s = "sha256:" + s
	}
	return wire.ParsePin(s)
}
