package controller

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
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// Pin is the hex SHA-256 of a certificate's DER: what a client pins.
func Pin(der []byte) string {
	s := sha256.Sum256(der)
	return hex.EncodeToString(s[:])
}

// The self-signed certificate's files in StateDir.
const (
	certFile = "tls.crt"
	keyFile  = "tls.key"
)

// loadCert is the operator's certificate, or the self-signed one kept in
// StateDir, made on first start.
func loadCert(cfg Config) (tls.Certificate, error) {
	if cfg.TLSCert != "" || cfg.TLSKey != "" {
		c, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return c, fmt.Errorf("controller TLS certificate: %w", err)
		}
		return c, nil
	}
	crt, key := filepath.Join(cfg.StateDir, certFile), filepath.Join(cfg.StateDir, keyFile)
	c, err := tls.LoadX509KeyPair(crt, key)
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return c, fmt.Errorf("controller self-signed certificate in %s: %w (remove both files to make a new one)", cfg.StateDir, err)
	}
	certPEM, keyPEM, err := selfSigned(sans(cfg), cfg.Now())
	if err != nil {
		return c, err
	}
	if err := os.WriteFile(key, keyPEM, 0o600); err != nil {
		return c, fmt.Errorf("controller self-signed key: %w", err)
	}
	if err := os.WriteFile(crt, certPEM, 0o644); err != nil {
		return c, fmt.Errorf("controller self-signed certificate: %w", err)
	}
	cfg.Log.Info("made a self-signed TLS certificate", "path", crt)
	return tls.X509KeyPair(certPEM, keyPEM)
}

// sans are the controller's names: the listen host (or every interface's
// address when it listens on all), the host name, loopback and Names.
func sans(cfg Config) []string {
	names := []string{"localhost", "127.0.0.1", "::1"}
	if h, err := os.Hostname(); err == nil {
		names = append(names, h)
	}
	host, _, err := net.SplitHostPort(cfg.Listen)
	if ip := net.ParseIP(host); err == nil && (host == "" || ip != nil && ip.IsUnspecified()) {
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					names = append(names, n.IP.String())
				}
			}
		}
	} else if err == nil {
		names = append(names, host)
	}
	names = append(names, cfg.Names...)
	slices.Sort(names)
	return slices.Compact(names)
}

// selfSigned makes an ECDSA P-256 certificate for names, valid ten
// years, as PEM.
func selfSigned(names []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "fullpipe controller", Organization: []string{"fullpipe"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), nil
}
