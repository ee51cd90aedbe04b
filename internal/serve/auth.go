package serve

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/wire"
)

// authenticate runs a control connection from its preamble to its
// request: greeting, request and, with a secret, the mutual proof (the
// client's auth, the responder's auth_ok, both bound to both nonces and
// the request's bytes). The request and auth frames come before any
// proof: each is read with the small cap (wire.MaxSmallFrame). It returns the request once the client may have
// a session. An error is a *wire.Error to send the client, or a
// connection error only to log.
func (s *Server) authenticate(c net.Conn, br *bufio.Reader) (wire.Request, error) {
	var req wire.Request
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := wire.WritePreamble(c, wire.MagicControl); err != nil {
		return req, err
	}
	if _, isTLS := c.(*tls.Conn); s.cfg.TLS != nil && !isTLS {
		return req, &wire.Error{Code: wire.CodeTLS, Message: "this responder takes control connections only over TLS: pass --tls and --tls-pin with the fingerprint its operator gives you"}
	}
	peer := addrIP(c.RemoteAddr())
	hello := wire.Hello{Version: wire.Version}
	if s.demandsProof() {
		if wait, ok := s.authLim.take(peer, time.Now()); !ok {
			return req, &wire.Error{Code: wire.CodeThrottled, Message: fmt.Sprintf("too many failed authentications from %v: wait %v, and check that --secret-file holds the responder's secret", peer, wait.Round(time.Second))}
		}
		hello.Challenge = wire.NewNonce()
	} else {
		l := s.Limits() // without a secret they are no secret: refusals tell them
		hello.Limits = &l
	}
	if err := wire.Encode(c, wire.TypeHello, hello); err != nil {
		return req, err
	}
	m, err := wire.DecodeLimit(br, wire.MaxSmallFrame) // before auth: small frames only
	if err == nil {
		err = m.Into(wire.TypeRequest, &req)
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			if hello.Challenge != nil {
				s.authLim.refund(peer, time.Now()) // left without trying a proof
			}
			return req, errLeftBeforeRequest // a client whose own check refused its request, or a scanner
		}
		return req, &wire.Error{Code: wire.CodeProtocol, Message: err.Error()}
	}
	if hello.Challenge == nil {
		return req, nil
	}
	var a wire.Auth
	am, err := wire.DecodeLimit(br, wire.MaxSmallFrame)
	if err == nil {
		err = am.Into(wire.TypeAuth, &a)
	}
	var key []byte
	if err == nil {
		key = s.provenKey(hello.Challenge, a, m.Body, time.Now())
	}
	if key == nil {
		return req, &wire.Error{Code: wire.CodeAuth, Message: s.authFailed()}
	}
	s.authLim.refund(peer, time.Now())
	ok := wire.AuthOK{MAC: wire.ProofMAC(key, wire.RoleResponder, hello.Challenge, a.Nonce, m.Body)}
	return req, wire.Encode(c, wire.TypeAuthOK, ok)
}

// demandsProof says whether clients must prove a key: the responder has
// a secret or a key ring (an empty ring refuses everyone).
func (s *Server) demandsProof() bool { return len(s.cfg.Secret) > 0 || s.cfg.Keys != nil }

// provenKey returns the key a's proof was made with: the secret, or a
// key of the ring live at now; nil when none (every candidate is tried,
// each in constant time).
func (s *Server) provenKey(challenge []byte, a wire.Auth, request []byte, now time.Time) []byte {
	if len(s.cfg.Secret) > 0 && wire.CheckProof(s.cfg.Secret, wire.RoleClient, challenge, a.Nonce, request, a.MAC) {
		return s.cfg.Secret
	}
	if s.cfg.Keys == nil {
		return nil
	}
	for _, k := range s.cfg.Keys.live(now) {
		if wire.CheckProof(k, wire.RoleClient, challenge, a.Nonce, request, a.MAC) {
			return k
		}
	}
	return nil
}

// authFailed is the refusal of a proof that matched no key.
func (s *Server) authFailed() string {
	if s.cfg.Keys != nil && len(s.cfg.Secret) == 0 {
		return "authentication failed: this responder takes only the keys of runs its fleet controller scheduled, each within its run's slot"
	}
	return "authentication failed: the client must pass --secret-file with the responder's secret"
}

// errLeftBeforeRequest is a client that closed its control connection
// after the greeting, without a request: logged, not answered.
var errLeftBeforeRequest = errors.New("client left before sending a request")

// Defaults of the authentication throttle: an address may fail
// authBurst times at once, then once per authRefill.
const (
	authBurst  = 5
	authRefill = 12 * time.Second
	// authMaxBuckets bounds the throttle's memory (about 64 B a bucket).
	authMaxBuckets = 1 << 16
)

// authLimiter throttles authentication per client address (per /64 for
// IPv6, which a client gets whole) with a token bucket: each attempt
// takes a token, a success or an attempt never made gives it back, so
// failures drain the bucket and concurrent guesses are bounded too. The
// caller passes now; the limiter reads no clock.
type authLimiter struct {
	burst  float64
	refill time.Duration

	mu      sync.Mutex // guards buckets
	buckets map[netip.Prefix]bucket
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

func newAuthLimiter(burst int, refill time.Duration) *authLimiter {
	return &authLimiter{burst: float64(burst), refill: refill, buckets: map[netip.Prefix]bucket{}}
}

// level returns b's tokens at now.
func (l *authLimiter) level(b bucket, now time.Time) float64 {
	return math.Min(l.burst, b.tokens+float64(now.Sub(b.at))/float64(l.refill))
}

// take spends one attempt of addr at now. When none is left it returns
// false and how long until the next one.
func (l *authLimiter) take(addr netip.Addr, now time.Time) (time.Duration, bool) {
	k := addrKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	b, seen := l.buckets[k]
	tokens := l.burst
	if seen {
		tokens = l.level(b, now)
	}
	if tokens < 1 {
		return time.Duration((1 - tokens) * float64(l.refill)), false
	}
	if !seen && len(l.buckets) >= authMaxBuckets {
		l.prune(now)
	}
	l.buckets[k] = bucket{tokens: tokens - 1, at: now}
	return 0, true
}

// refund gives back the attempt of a client that proved the secret or
// left without trying.
func (l *authLimiter) refund(addr netip.Addr, now time.Time) {
	k := addrKey(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	if b, ok := l.buckets[k]; ok {
		l.buckets[k] = bucket{tokens: math.Min(l.burst, l.level(b, now)+1), at: now}
	}
}

// prune drops full buckets (they hold nothing a new one would not); if
// that frees nothing, it forgets every address: memory stays bounded and
// the cost is a fresh burst for each, documented in docs/serve.md.
func (l *authLimiter) prune(now time.Time) {
	for k, b := range l.buckets {
		if l.level(b, now) >= l.burst {
			delete(l.buckets, k)
		}
	}
	if len(l.buckets) >= authMaxBuckets {
		clear(l.buckets)
	}
}
