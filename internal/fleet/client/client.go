// Package client is a typed Go client of the fleet controller's HTTP
// JSON API (docs/openapi.yaml): the agent's calls (Register, Heartbeat,
// Start, Upload, Events) and the operator's. It speaks TLS only, and
// pins the controller's certificate when given its pin (the SHA-256 of
// the certificate's DER, in hex, as the controller logs it).
package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// Options are a client's TLS trust and timeout. The zero value trusts
// the system's roots and waits DefaultTimeout per call.
type Options struct {
	// Pin is the controller certificate's SHA-256 (hex): when set, the
	// certificate must be exactly that one, whoever signed it.
	Pin string
	// CAFile is a PEM file of roots to trust instead of the system's.
	CAFile string
	// Timeout bounds each call (0: DefaultTimeout); a context's deadline
	// also holds.
	Timeout time.Duration
	// Insecure allows a plain http:// URL (tests of last resort).
	Insecure bool
}

// DefaultTimeout bounds each call when Options.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// maxAnswer bounds an answer's body: a result with its document is the
// largest (the controller takes up to 16 MiB).
const maxAnswer = 64 << 20

// Client calls one controller with one token. It is safe for
// concurrent use.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// Error is an answer of the API other than success: its status and its
// one line. It matches the fleet's errors by status with errors.Is: 401
// fleet.ErrUnauthorized, 404 fleet.ErrNotFound, 409 fleet.ErrConflict
// and fleet.ErrExists.
type Error struct {
	Status  int    // HTTP status
	Message string // the API's one line (fleet.Error)
}

func (e *Error) Error() string {
	return fmt.Sprintf("controller: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Is matches the fleet error of e's status.
func (e *Error) Is(target error) bool {
	switch e.Status {
	case http.StatusUnauthorized:
		return target == fleet.ErrUnauthorized
	case http.StatusNotFound:
		return target == fleet.ErrNotFound
	case http.StatusConflict:
		return target == fleet.ErrConflict || target == fleet.ErrExists
	}
	return false
}

// StatusOf is err's HTTP status when it is an *Error, else 0.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// New is a client of the controller at rawURL (https://host:port) that
// presents token.
func New(rawURL, token string, o Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(rawURL, "/"))
	if err != nil {
		return nil, fmt.Errorf("controller URL %q: %w", rawURL, err)
	}
	if u.Scheme != "https" && !(u.Scheme == "http" && o.Insecure) {
		return nil, fmt.Errorf("controller URL %q: want https://host:port", rawURL)
	}
	cfg, err := tlsConfig(o)
	if err != nil {
		return nil, err
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg
	tr.Proxy = nil
	return &Client{base: u, token: token, http: &http.Client{Transport: tr, Timeout: o.Timeout}}, nil
}

// tlsConfig trusts the pin, the CA file or the system's roots.
func tlsConfig(o Options) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA file %s: no PEM certificate in it", o.CAFile)
		}
		cfg.RootCAs = pool
	}
	if o.Pin != "" {
		want, err := hex.DecodeString(strings.ReplaceAll(strings.ToLower(o.Pin), ":", ""))
		if err != nil || len(want) != sha256.Size {
			return nil, fmt.Errorf("pin %q: want the certificate's SHA-256 as 64 hex digits", o.Pin)
		}
		// The pin replaces the chain's verification: the certificate is
		// the one the operator was told, whoever signed it.
		cfg.InsecureSkipVerify = true
		cfg.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("controller presented no certificate")
			}
			got := sha256.Sum256(cs.PeerCertificates[0].Raw)
			if !bytes.Equal(got[:], want) {
				return fmt.Errorf("controller certificate %x does not match the pin %x", got, want)
			}
			return nil
		}
	}
	return cfg, nil
}

// do sends in (when not nil) as JSON and decodes the answer into out
// (when not nil); any status ≥ 300 is an *Error.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, in, out any) error {
	u := *c.base
	u.Path = c.base.Path + path
	u.RawQuery = q.Encode()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("controller %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("controller %s %s: reading the answer: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		var e fleet.Error
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return &Error{Status: resp.StatusCode, Message: e.Error}
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("controller %s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// Raw gets path (below the controller's root, e.g. "/metrics") with the
// token and returns the body: for what is not JSON.
func (c *Client) Raw(ctx context.Context, path string) ([]byte, error) {
	u := *c.base
	u.Path = c.base.Path + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("controller GET %s: %w", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err == nil && resp.StatusCode >= 300 {
		err = &Error{Status: resp.StatusCode, Message: strings.TrimSpace(string(b))}
	}
	return b, err
}

// Close releases the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }
