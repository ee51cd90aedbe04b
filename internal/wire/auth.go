package wire

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Hello is the responder's greeting. It says nothing about the host: the
// software and kernel go only to a client that has proven the secret
// (auth_ok) or, without a secret, sent a valid request (accept).
type Hello struct {
	Version   uint16 `json:"version"`
	Challenge []byte `json:"challenge,omitempty"` // the responder's nonce (NonceLen bytes), when a secret is required
	// Limits are the responder's limits on a request, so the client can
	// check its request before sending it (optional, added in version 3:
	// older responders send none). A responder that requires a secret
	// announces none: before the proof it says nothing of itself but its
	// version. Without a secret anyone learns them anyway, from refusals.
	Limits *Limits `json:"limits,omitempty"`
}

// Announced is what the client checks its request against: the limits
// the responder announced, or FormOnly when it announced none.
func (h Hello) Announced() Limits {
	if h.Limits == nil {
		return FormOnly()
	}
	return *h.Limits
}

// Host describes the responder.
type Host struct {
	Server string `json:"server"` // software and version
	Kernel string `json:"kernel"` // uname sysname and release
}

// Auth is the client's proof, sent right after its request.
type Auth struct {
	Nonce []byte `json:"nonce"` // the client's nonce, NonceLen random bytes
	MAC   []byte `json:"mac"`   // ProofMAC(secret, RoleClient, challenge, nonce, request)
}

// AuthOK is the responder's proof, then the host it runs on.
type AuthOK struct {
	MAC []byte `json:"mac"` // ProofMAC(secret, RoleResponder, challenge, nonce, request)
	Host
}

// NonceLen is the length of each side's nonce in bytes.
const NonceLen = 32

// Role labels a proof with the side that makes it, so one side's MAC is
// never valid as the other's (a fake responder cannot reflect the
// client's proof back).
type Role string

// Roles.
const (
	RoleClient    Role = "fullpipe-v3 client"
	RoleResponder Role = "fullpipe-v3 responder"
)

// ProofMAC is one side's proof of the secret: HMAC-SHA256 keyed with the
// secret over role || 0x00 || challenge || nonce || SHA-256(request),
// request being the request frame's body as sent. Both nonces are fresh
// per connection and the request is bound, so a captured proof is valid
// for no other connection and no other request.
func ProofMAC(secret []byte, role Role, challenge, nonce, request []byte) []byte {
	rh := sha256.Sum256(request)
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(role))
	m.Write([]byte{0})
	m.Write(challenge)
	m.Write(nonce)
	m.Write(rh[:])
	return m.Sum(nil)
}

// CheckProof reports whether mac is role's proof for these nonces and
// request (constant time). Nonces of another length never pass.
func CheckProof(secret []byte, role Role, challenge, nonce, request, mac []byte) bool {
	if len(challenge) != NonceLen || len(nonce) != NonceLen {
		return false
	}
	return hmac.Equal(ProofMAC(secret, role, challenge, nonce, request), mac)
}

// NewNonce returns NonceLen random bytes.
func NewNonce() []byte {
	b := make([]byte, NonceLen)
	_, _ = rand.Read(b)
	return b
}

// ResponderAuthError says the responder did not prove the shared secret:
// a fake responder, or one with another secret.
type ResponderAuthError struct{ Why string }

func (e *ResponderAuthError) Error() string {
	return fmt.Sprintf("the responder did not prove the shared secret (%s): it is not the responder your --secret-file belongs to, or its secret differs; stopped before any test", e.Why)
}

// MinSecretLen is the shortest secret accepted, in bytes.
const MinSecretLen = 16

// secretHowTo says how to make a good secret.
const secretHowTo = "make one with `head -c 32 /dev/urandom | base64 > key` and give the same file to both ends"

// CheckSecret refuses a secret too short or too uniform to resist offline
// guessing from one captured exchange. The MAC is keyed with the secret
// itself (no stretching), so its strength is the secret's entropy: 16
// random bytes or more. Length and variety are all a program can check.
func CheckSecret(secret []byte) error {
	if len(secret) < MinSecretLen {
		return fmt.Errorf("secret is %d bytes, below the minimum of %d random bytes: %s", len(secret), MinSecretLen, secretHowTo)
	}
	var seen [256]bool
	distinct := 0
	for _, b := range secret {
		if !seen[b] {
			seen[b] = true
			distinct++
		}
	}
	if distinct < 8 {
		return fmt.Errorf("secret uses only %d distinct characters, too uniform to be random: %s", distinct, secretHowTo)
	}
	return nil
}

// Fingerprint is a certificate's pin as --tls-pin spells it: "sha256:"
// and the lower-case hex SHA-256 of the certificate's DER bytes.
func Fingerprint(der []byte) string {
	h := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(h[:])
}

// ParsePin reads a pin "sha256:HEX" (upper or lower case, colons between
// bytes allowed, as openssl prints them) and returns the 32-byte digest.
func ParsePin(s string) ([]byte, error) {
	hexPart, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(s)), "sha256:")
	if !ok {
		return nil, fmt.Errorf("pin %q: want sha256:HEX, the fingerprint `fullpipe serve` prints at start", s)
	}
	b, err := hex.DecodeString(strings.ReplaceAll(hexPart, ":", ""))
	if err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("pin %q: want sha256: and 64 hex digits, the fingerprint `fullpipe serve` prints at start", s)
	}
	return b, nil
}
