// Package wire is fullpipe's control protocol between a tester (client) and a
// responder (server): connection preambles, length-prefixed JSON frames, the
// message set and the shared-secret challenge/response. The specification is
// docs/protocol.md; the constants here are named after it.
package wire

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Version is the protocol version this build speaks. Peers must match exactly.
const Version uint16 = 3

// DefaultPort is the responder's TCP (control and data) and UDP (probes) port.
const DefaultPort = 6349

// Preamble magics: the first four bytes a client writes on a TCP connection.
const (
	MagicControl = "FPCT" // control connection: frames follow
	MagicData    = "FPDT" // data connection: a DataHello follows, then payload
)

// PreambleLen is the length of a preamble: magic (4) + version (2, big endian).
const PreambleLen = 6

// MaxFrame bounds a frame's body; larger frames are a protocol error.
const MaxFrame = 1 << 20

// MaxSmallFrame bounds the frames a responder reads before
// authentication (request, then auth) and on data connections (data):
// none of them needs more, and a connection that has proved nothing must
// not make the responder hold more than this per frame.
const MaxSmallFrame = 4 << 10

// CookieLen is the length of a session cookie in bytes.
const CookieLen = 16

// Cookie identifies a session on data connections and UDP packets.
type Cookie [CookieLen]byte

// String returns the cookie in hex.
func (c Cookie) String() string { return fmt.Sprintf("%x", c[:]) }

// MarshalText encodes the cookie as hex for JSON.
func (c Cookie) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText decodes a hex cookie.
func (c *Cookie) UnmarshalText(b []byte) error {
	if len(b) != 2*CookieLen {
		return fmt.Errorf("cookie must be %d hex digits, got %d", 2*CookieLen, len(b))
	}
	if _, err := hex.Decode(c[:], b); err != nil {
		return fmt.Errorf("cookie: %w", err)
	}
	return nil
}

// NewCookie returns a random cookie.
func NewCookie() Cookie {
	var c Cookie
	_, _ = rand.Read(c[:])
	return c
}

// VersionError says the peer speaks another protocol version.
type VersionError struct{ Ours, Theirs uint16 }

// AsWire turns the mismatch into an error message body for the peer.
func (e *VersionError) AsWire() Error {
	return Error{Code: CodeVersion, Message: fmt.Sprintf("this responder speaks protocol version %d, the client %d; run the same fullpipe release on both ends", e.Ours, e.Theirs)}
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("protocol version mismatch: we speak %d, the peer speaks %d; run the same fullpipe release on both ends", e.Ours, e.Theirs)
}

// NotFullpipeError says the peer did not answer with a fullpipe preamble.
type NotFullpipeError struct{ Got []byte }

func (e *NotFullpipeError) Error() string {
	return fmt.Sprintf("the peer does not speak fullpipe (it sent %q instead of the fullpipe preamble): not a fullpipe responder or client", e.Got)
}

// WritePreamble writes magic and Version.
func WritePreamble(w io.Writer, magic string) error {
	var b [PreambleLen]byte
	copy(b[:4], magic)
	binary.BigEndian.PutUint16(b[4:], Version)
	_, err := w.Write(b[:])
	return err
}

// ReadPreamble reads a preamble and returns its magic and version. It does not
// check the version: callers decide how to answer a mismatch.
func ReadPreamble(r io.Reader) (magic string, version uint16, err error) {
	var b [PreambleLen]byte
	if n, err := io.ReadFull(r, b[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return "", 0, &NotFullpipeError{Got: b[:n]}
		}
		return "", 0, err
	}
	m := string(b[:4])
	if m != MagicControl && m != MagicData {
		return "", 0, &NotFullpipeError{Got: b[:]}
	}
	return m, binary.BigEndian.Uint16(b[4:]), nil
}

// Message types.
const (
	TypeHello    = "hello"    // server → client, after the preamble
	TypeRequest  = "request"  // client → server: the test wanted (before auth, bound by its MAC)
	TypeAuth     = "auth"     // client → server, answer to the challenge
	TypeAuthOK   = "auth_ok"  // server → client, the responder's own proof
	TypeAccept   = "accept"   // server → client: session created
	TypeStart    = "start"    // client → server: data connections are open, go
	TypeStarted  = "started"  // server → client: measurement clock started
	TypeInterval = "interval" // server → client: the server's per-interval samples
	TypeStop     = "stop"     // client → server: end early (Ctrl-C, error)
	TypeResult   = "result"   // server → client: the server's final figures
	TypeError    = "error"    // either way: a refusal or failure, then close
	TypeData     = "data"     // client → server, first frame on a data connection
)

// Msg is one control frame: a type and, for most types, a body.
type Msg struct {
	Type string          `json:"type"`
	Body json.RawMessage `json:"body,omitempty"`
}

// ErrorCode classifies an Error message.
type ErrorCode string

// Error codes.
const (
	CodeVersion    ErrorCode = "version"
	CodeAuth       ErrorCode = "auth"
	CodeThrottled  ErrorCode = "throttled" // too many failed authentications from one address
	CodeTLS        ErrorCode = "tls"       // the responder requires TLS on the control connection
	CodeBadRequest ErrorCode = "bad_request"
	CodeLimit      ErrorCode = "limit"
	CodeBusy       ErrorCode = "busy"
	CodeInternal   ErrorCode = "internal"
	CodeProtocol   ErrorCode = "protocol"
)

// Error is the body of an error message; it is also a Go error on the client.
type Error struct {
	Code    ErrorCode `json:"code"`
	Message string    `json:"message"`
	// RetryAfter, on a busy refusal, is how long the client should wait
	// before it asks again (0: no advice).
	RetryAfter time.Duration `json:"retry_after_ns,omitempty"`
}

func (e *Error) Error() string {
	if e.RetryAfter > 0 {
		return fmt.Sprintf("responder refused (%s): %s; retry after %v", e.Code, e.Message, e.RetryAfter.Round(time.Second))
	}
	return fmt.Sprintf("responder refused (%s): %s", e.Code, e.Message)
}

// Encode writes one frame: a 4-byte big-endian body length, then the JSON of
// a Msg whose body is v (nil for no body).
func Encode(w io.Writer, typ string, v any) error {
	m := Msg{Type: typ}
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode %s: %w", typ, err)
		}
		m.Body = b
	}
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", typ, err)
	}
	if len(body) > MaxFrame {
		return fmt.Errorf("encode %s: frame of %d bytes exceeds %d", typ, len(body), MaxFrame)
	}
	buf := make([]byte, 4+len(body))
	binary.BigEndian.PutUint32(buf, uint32(len(body)))
	copy(buf[4:], body)
	_, err = w.Write(buf)
	return err
}

// ProtocolError is a malformed frame.
type ProtocolError struct{ Reason string }

func (e *ProtocolError) Error() string { return "protocol error: " + e.Reason }

// Decode reads one frame of at most MaxFrame bytes. It reads exactly the
// frame's bytes, so a data connection's payload after its hello is left
// unread.
func Decode(r io.Reader) (Msg, error) { return DecodeLimit(r, MaxFrame) }

// growStep is the most a frame's buffer grows by before the bytes to fill
// it have arrived: a header that announces a large frame costs its sender
// the bytes, not the reader the allocation.
const growStep = 16 << 10

// DecodeLimit is Decode with a smaller bound on the frame's body (limit
// ≤ MaxFrame). The body's buffer grows as bytes arrive.
func DecodeLimit(r io.Reader, limit uint32) (Msg, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Msg{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > min(limit, MaxFrame) {
		return Msg{}, &ProtocolError{Reason: fmt.Sprintf("frame of %d bytes exceeds %d", n, min(limit, MaxFrame))}
	}
	body := make([]byte, 0, min(n, growStep))
	for len(body) < int(n) {
		chunk := min(int(n)-len(body), max(growStep, len(body)))
		body = append(body, make([]byte, chunk)...)
		if _, err := io.ReadFull(r, body[len(body)-chunk:]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return Msg{}, err
		}
	}
	return Parse(body)
}

// Parse decodes a frame body (without the length prefix).
func Parse(body []byte) (Msg, error) {
	var m Msg
	if err := json.Unmarshal(body, &m); err != nil {
		return Msg{}, &ProtocolError{Reason: "frame is not JSON: " + err.Error()}
	}
	if m.Type == "" {
		return Msg{}, &ProtocolError{Reason: "frame has no type"}
	}
	return m, nil
}

// Into decodes m's body into v, checking the type first.
func (m Msg) Into(typ string, v any) error {
	if m.Type == TypeError && typ != TypeError {
		var e Error
		if err := json.Unmarshal(m.Body, &e); err != nil {
			return &ProtocolError{Reason: "bad error body: " + err.Error()}
		}
		return &e
	}
	if m.Type != typ {
		return &ProtocolError{Reason: fmt.Sprintf("expected %q, got %q", typ, m.Type)}
	}
	if v == nil {
		return nil
	}
	if len(m.Body) == 0 {
		return &ProtocolError{Reason: fmt.Sprintf("%q has no body", typ)}
	}
	if err := json.Unmarshal(m.Body, v); err != nil {
		return &ProtocolError{Reason: fmt.Sprintf("bad %s body: %v", typ, err)}
	}
	return nil
}
