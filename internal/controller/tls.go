package controller

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fullpipe/fullpipe/internal/certs"
)

// The self-signed certificate's files in StateDir.
const (
	certFile = "tls.crt"
	keyFile  = "tls.key"
	// certValidity: clients pin the certificate itself, so its dates
	// only need to outlive the install.
	certValidity = 10 * 365 * 24 * time.Hour
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
	certPEM, keyPEM, err := certs.SelfSigned("fullpipe controller", sans(cfg), cfg.Now(), certValidity)
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
