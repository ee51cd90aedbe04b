package wire

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestFrameRoundTrip(t *testing.T) {
	req := Request{Kind: KindTCP, Streams: 4, Duration: 10 * time.Second, Window: 65536, CC: "cubic", Interval: time.Second}
	var buf bytes.Buffer
	if err := Encode(&buf, TypeRequest, req); err != nil {
		t.Fatal(err)
	}
	m, err := Decode(bufio.NewReader(&buf))
	if err != nil {
		t.Fatal(err)
	}
	var got Request
	if err := m.Into(TypeRequest, &got); err != nil {
		t.Fatal(err)
	}
	if got != req {
		t.Fatalf("round trip: got %+v want %+v", got, req)
	}
}

func TestIntoErrorBecomesGoError(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, TypeError, Error{Code: CodeLimit, Message: "too many streams"}); err != nil {
		t.Fatal(err)
	}
	m, err := Decode(bufio.NewReader(&buf))
	if err != nil {
		t.Fatal(err)
	}
	var acc Accept
	err = m.Into(TypeAccept, &acc)
	var we *Error
	if !errors.As(err, &we) || we.Code != CodeLimit {
		t.Fatalf("want *Error with code limit, got %v", err)
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name  string
		frame []byte
	}{
		{"oversized", binary.BigEndian.AppendUint32(nil, MaxFrame+1)},
		{"not json", append(binary.BigEndian.AppendUint32(nil, 3), "abc"...)},
		{"no type", append(binary.BigEndian.AppendUint32(nil, 2), "{}"...)},
		{"truncated", append(binary.BigEndian.AppendUint32(nil, 10), "{}"...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Decode(bufio.NewReader(bytes.NewReader(tc.frame))); err == nil {
				t.Fatal("decoded a bad frame")
			}
		})
	}
}

func TestPreamble(t *testing.T) {
	var buf bytes.Buffer
	if err := WritePreamble(&buf, MagicControl); err != nil {
		t.Fatal(err)
	}
	m, v, err := ReadPreamble(&buf)
	if err != nil || m != MagicControl || v != Version {
		t.Fatalf("got %q %d %v", m, v, err)
	}
	_, _, err = ReadPreamble(bytes.NewReader([]byte("SSH-2.0-OpenSSH")))
	var nf *NotFullpipeError
	if !errors.As(err, &nf) {
		t.Fatalf("want NotFullpipeError, got %v", err)
	}
}

func TestUDPHeader(t *testing.T) {
	b := make([]byte, 100)
	h := UDPHeader{Type: UDPEcho, Cookie: NewCookie(), Seq: 1<<40 + 7, SentNs: 123456789}
	PutUDP(b, h)
	got, err := ParseUDP(b)
	if err != nil || got != h {
		t.Fatalf("got %+v %v want %+v", got, err, h)
	}
	if _, err := ParseUDP(b[:UDPHeaderLen-1]); err == nil {
		t.Fatal("short packet accepted")
	}
	b[4] = 9
	if _, err := ParseUDP(b); err == nil {
		t.Fatal("unknown type accepted")
	}
}

// TestCompactHeader: a datagram of 18..39 bytes carries the compact
// header: type, the cookie's tag (not its bytes), 40 bits of sequence and
// the send time; it round-trips, matches its cookie and no other, never
// starts with the full header's 'F', and an echo turns into its reply
// in place.
func TestCompactHeader(t *testing.T) {
	c := NewCookie()
	for _, n := range []int{CompactLen, 30, UDPHeaderLen - 1} {
		b := make([]byte, n)
		in := UDPHeader{Type: UDPEcho, Cookie: c, Seq: 1<<40 - 2, SentNs: -5}
		PutUDP(b, in)
		if b[0] == UDPMagic[0] || bytes.Contains(b, c[0:4]) {
			t.Fatalf("compact header % x: starts with 'F' or carries the cookie", b)
		}
		h, err := ParseUDP(b)
		want := UDPHeader{Type: UDPEcho, Seq: in.Seq, SentNs: -5, Compact: true, Tag: c.Tag()}
		if err != nil || h != want || !h.Matches(c) || h.Matches(NewCookie()) {
			t.Fatalf("%d bytes: got %+v %v, want %+v", n, h, err, want)
		}
		SetUDPType(b, h, UDPEchoReply)
		if r, err := ParseUDP(b); err != nil || r.Type != UDPEchoReply || r.Seq != in.Seq {
			t.Fatalf("reply %+v %v", r, err)
		}
	}
	b := make([]byte, CompactLen)
	PutUDP(b, UDPHeader{Type: UDPData, Cookie: c, Seq: 1<<40 + 3})
	if h, _ := ParseUDP(b); h.Seq != 3 {
		t.Fatalf("sequence %d: want it modulo 2^40", h.Seq)
	}
	if _, err := ParseUDP(b[:CompactLen-1]); err == nil {
		t.Fatal("a 17-byte datagram parsed")
	}
	b[0] = 0xC0 // type 0
	if _, err := ParseUDP(b); err == nil {
		t.Fatal("compact type 0 accepted")
	}
	full := make([]byte, UDPHeaderLen)
	PutUDP(full, UDPHeader{Type: UDPData, Cookie: c})
	if h, err := ParseUDP(full); err != nil || h.Compact || !h.Matches(c) {
		t.Fatalf("full header %+v %v", h, err)
	}
}

func TestCookieText(t *testing.T) {
	c := NewCookie()
	txt, _ := c.MarshalText()
	var d Cookie
	if err := d.UnmarshalText(txt); err != nil || d != c {
		t.Fatalf("cookie round trip: %v", err)
	}
	if err := d.UnmarshalText([]byte("zz")); err == nil {
		t.Fatal("bad cookie accepted")
	}
}

// TestEchoStamp: a stamped reply carries the responder's receive time at
// bytes 40-47, big endian; a reply shorter than 48 bytes carries none.
func TestEchoStamp(t *testing.T) {
	b := make([]byte, EchoStampLen)
	PutUDP(b, UDPHeader{Type: UDPEchoReply, Seq: 9, SentNs: 123, EchoMode: EchoStamped})
	PutEchoStamp(b, 0x0102030405060708)
	if !bytes.Equal(b[40:48], []byte{1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Fatalf("stamp bytes % x", b[40:48])
	}
	got, ok := EchoStamp(b)
	h, err := ParseUDP(b)
	if !ok || got != 0x0102030405060708 || err != nil || h.EchoMode != EchoStamped || h.SentNs != 123 {
		t.Fatalf("stamp %x %v, header %+v %v", got, ok, h, err)
	}
	if _, ok := EchoStamp(b[:47]); ok {
		t.Fatal("a 47-byte reply has no stamp")
	}
}

// TestFrameMemory: a header that announces a 1 MiB frame followed by 10
// bytes makes the decoder allocate for what arrived (one 16 KiB step),
// not the announced length; a header beyond DecodeLimit's bound is
// refused before any allocation for the body.
func TestFrameMemory(t *testing.T) {
	in := append([]byte{0, 0x10, 0, 0}, "0123456789"...)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Decode(bytes.NewReader(in))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want unexpected EOF", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
		t.Errorf("decoding 14 bytes of a frame announcing 1 MiB allocated %d bytes", got)
	}
	_, err = DecodeLimit(bytes.NewReader(append([]byte{0, 0, 0x10, 1}, make([]byte, 5000)...)), MaxSmallFrame)
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Errorf("a 4097-byte frame against a 4 KiB limit: err = %v, want a protocol error", err)
	}
	// A frame that arrives whole still decodes across the growth steps.
	body := `{"type":"stop","body":{"reason":"` + strings.Repeat("x", 40000) + `"}}`
	var buf bytes.Buffer
	buf.Write(binary.BigEndian.AppendUint32(nil, uint32(len(body))))
	buf.WriteString(body)
	m, err := Decode(&buf)
	var st Stop
	if err != nil || m.Into(TypeStop, &st) != nil || len(st.Reason) != 40000 {
		t.Errorf("40 kB frame: %v", err)
	}
}
