package certs

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"strings"
	"testing"
	"time"
)

// TestSelfSigned: the pair loads as a TLS certificate, names its DNS
// names and IPs, is valid now and for the validity asked, is a server's,
// and its pin is the SHA-256 of its DER in hex.
func TestSelfSigned(t *testing.T) {
	now := time.Now()
	c, k, err := SelfSigned("fullpipe test", []string{"ctl.example.net", "198.18.0.1", "::1"}, now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tls.X509KeyPair(c, k); err != nil {
		t.Fatalf("not a TLS pair: %v", err)
	}
	blk, _ := pem.Decode(c)
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.VerifyHostname("ctl.example.net"); err != nil {
		t.Error(err)
	}
	if err := cert.VerifyHostname("198.18.0.1"); err != nil {
		t.Error(err)
	}
	if len(cert.IPAddresses) != 2 || !cert.IPAddresses[1].Equal(net.ParseIP("::1")) {
		t.Errorf("IP SANs %v", cert.IPAddresses)
	}
	if !cert.NotBefore.Before(now) || cert.NotAfter.Sub(now) < 23*time.Hour || cert.NotAfter.Sub(now) > 25*time.Hour {
		t.Errorf("valid %v to %v, asked 24 h from %v", cert.NotBefore, cert.NotAfter, now)
	}
	if len(cert.ExtKeyUsage) != 1 || cert.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("key usage %v", cert.ExtKeyUsage)
	}
	p := Pin(blk.Bytes)
	if len(p) != 64 || strings.ToLower(p) != p {
		t.Errorf("pin %q: want 64 lower-case hex digits", p)
	}
	c2, _, _ := SelfSigned("fullpipe test", nil, now, time.Hour)
	blk2, _ := pem.Decode(c2)
	if Pin(blk2.Bytes) == p {
		t.Error("two certificates, one pin")
	}
}
