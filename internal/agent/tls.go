package agent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

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
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return cert, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return cert, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "fullpipe agent " + name},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return cert, err
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return cert, err
	}
	// The key first: a crash between the two leaves no certificate, and
	// the next start makes a new pair.
	if err := writeFile(kp, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}), 0o600); err != nil {
		return cert, err
	}
	if err := writeFile(cp, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return cert, err
	}
	return tls.X509KeyPair(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
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
func certPin(cert tls.Certificate) string {
	h := sha256.Sum256(cert.Certificate[0])
	return hex.EncodeToString(h[:])
}

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
