package serve

// The attacker: a raw protocol client that does what a well-behaved
// tester never does. attackMain runs one attack in a child process and
// prints its outcome as JSON; the tests assert on the responder.

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"time"

	"github.com/fullpipe/fullpipe/internal/wire"
)

// rawSession is an open control connection with an accepted request.
type rawSession struct {
	c      net.Conn
	br     *bufio.Reader
	accept wire.Accept
}

// openRaw dials addr from bind (any local address when ""), greets and
// asks for req; a refusal comes back as a *wire.Error.
func openRaw(addr, bind string, req wire.Request) (*rawSession, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	if bind != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(bind)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &rawSession{c: c, br: bufio.NewReader(c)}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if err := s.handshake(req); err != nil {
		c.Close()
		return nil, err
	}
	_ = c.SetDeadline(time.Time{})
	return s, nil
}

func (s *rawSession) handshake(req wire.Request) error {
	if err := wire.WritePreamble(s.c, wire.MagicControl); err != nil {
		return err
	}
	if _, _, err := wire.ReadPreamble(s.br); err != nil {
		return err
	}
	if err := s.read(wire.TypeHello, &wire.Hello{}); err != nil {
		return err
	}
	if err := wire.Encode(s.c, wire.TypeRequest, req); err != nil {
		return err
	}
	return s.read(wire.TypeAccept, &s.accept)
}

func (s *rawSession) read(typ string, v any) error {
	m, err := wire.Decode(s.br)
	if err != nil {
		return err
	}
	return m.Into(typ, v)
}

// openData opens a data connection with its hello.
func openData(addr, bind string, dh wire.DataHello) (net.Conn, error) {
	d := net.Dialer{Timeout: 2 * time.Second}
	if bind != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(bind)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
	err = wire.WritePreamble(c, wire.MagicData)
	if err == nil {
		err = wire.Encode(c, wire.TypeData, dh)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// start sends start and reads started.
func (s *rawSession) start() error {
	_ = s.c.SetDeadline(time.Now().Add(5 * time.Second))
	defer s.c.SetDeadline(time.Time{})
	if err := wire.Encode(s.c, wire.TypeStart, nil); err != nil {
		return err
	}
	return s.read(wire.TypeStarted, nil)
}

// probe is one kind of echo the echo attack sends Count of.
type probe struct {
	Size, ReplySize, Count int
	Mode                   byte
	OtherPort              bool // from a second socket, after the first registered
	// Below wire.UDPHeaderLen a probe has the compact header (a mirror
	// echo); WrongTag names no session in it.
	WrongTag bool
}

type echoAttack struct {
	Addr   string
	Req    wire.Request
	Probes []probe
}

// echoOutcome is, per probe kind, the size of every reply received.
type echoOutcome struct{ Replies [][]int }

// attackEcho opens a session, registers its UDP port with one probe, then
// sends each kind of probe and records the replies each socket gets.
func attackEcho(a echoAttack) (any, error) {
	s, err := openRaw(a.Addr, "", a.Req)
	if err != nil {
		return nil, err
	}
	defer s.c.Close()
	if err := s.start(); err != nil {
		return nil, err
	}
	raddr := s.c.RemoteAddr().(*net.TCPAddr)
	var socks [2]*net.UDPConn
	for i := range socks {
		if socks[i], err = net.DialUDP("udp", nil, &net.UDPAddr{IP: raddr.IP, Port: raddr.Port}); err != nil {
			return nil, err
		}
		defer socks[i].Close()
	}
	var out echoOutcome
	for _, p := range a.Probes {
		c := socks[0]
		if p.OtherPort {
			c = socks[1]
		}
		buf := make([]byte, max(p.Size, wire.CompactLen))
		h := wire.UDPHeader{Type: wire.UDPEcho, Cookie: s.accept.Cookie, EchoMode: p.Mode, EchoSize: uint16(p.ReplySize)}
		if p.WrongTag {
			h.Cookie, h.Tag = wire.Cookie{}, s.accept.Cookie.Tag()+1
		}
		wire.PutUDP(buf, h)
		buf = buf[:p.Size]
		for range p.Count {
			_, _ = c.Write(buf)
		}
		out.Replies = append(out.Replies, readReplies(c, 300*time.Millisecond))
	}
	return out, nil
}

// readReplies returns the sizes of the datagrams c receives until quiet
// for wait.
func readReplies(c *net.UDPConn, wait time.Duration) []int {
	sizes := []int{}
	buf := make([]byte, 65536)
	for {
		_ = c.SetReadDeadline(time.Now().Add(wait))
		n, err := c.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return sizes
			}
			continue // ICMP errors surface on connected UDP
		}
		sizes = append(sizes, n)
	}
}

type connsAttack struct {
	Addr, Bind string
	N          int
	// Send is what each connection writes: "" nothing, "preamble" a
	// control preamble, "header" a preamble and a frame header that
	// announces a 1 MiB frame.
	Send string
	// Spread, when > 0, binds connection i to the (i mod Spread)-th
	// address from Bind on (loopback has all of 127.0.0.0/8): as many
	// clients as addresses, each within the per-address auth throttle.
	Spread int
}

type connsOutcome struct{ Opened, Failed int }

// attackConns opens N connections that never finish a handshake.
func attackConns(a connsAttack) (any, []net.Conn, error) {
	var payload []byte
	switch a.Send {
	case "preamble", "header":
		payload = []byte(wire.MagicControl + "\x00\x00")
		binary.BigEndian.PutUint16(payload[4:], wire.Version)
		if a.Send == "header" {
			payload = binary.BigEndian.AppendUint32(payload, wire.MaxFrame)
		}
	}
	var out connsOutcome
	var held []net.Conn
	for i := range a.N {
		d := net.Dialer{Timeout: time.Second}
		if a.Bind != "" {
			ip := netip.MustParseAddr(a.Bind)
			for range i % max(a.Spread, 1) {
				ip = ip.Next()
			}
			d.LocalAddr = &net.TCPAddr{IP: ip.AsSlice()}
		}
		c, err := d.Dial("tcp", a.Addr)
		if err != nil {
			out.Failed++
			continue
		}
		out.Opened++
		held = append(held, c)
		if len(payload) > 0 {
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write(payload)
		}
	}
	return out, held, nil
}

type hogAttack struct {
	Addr, Bind string
	N          int
	Req        wire.Request
}

type hogOutcome struct {
	Accepted, Busy int
	RetryAfter     time.Duration // the largest advised
	Message        string        // the last refusal
}

// attackHog opens N sessions of Req and starts them, then never reads.
func attackHog(a hogAttack) (any, []net.Conn, error) {
	var out hogOutcome
	var held []net.Conn
	for range a.N {
		s, err := openRaw(a.Addr, a.Bind, a.Req)
		var we *wire.Error
		switch {
		case errors.As(err, &we):
			out.Busy++
			out.RetryAfter = max(out.RetryAfter, we.RetryAfter)
			out.Message = we.Error()
			continue
		case err != nil:
			return nil, held, err
		}
		held = append(held, s.c)
		for i := range a.Req.Streams { // a tcp test's data connections, never read
			d, err := openData(a.Addr, a.Bind, wire.DataHello{Cookie: s.accept.Cookie, Stream: i, ClientSends: !a.Req.Reverse})
			if err != nil {
				return nil, held, err
			}
			held = append(held, d)
		}
		if err := s.start(); err != nil {
			return nil, held, err
		}
		out.Accepted++
	}
	return out, held, nil
}

// attackMain runs the attack name with its JSON argument, prints the
// outcome as one JSON line, and holds its connections until stdin closes.
func attackMain(name, arg string) int {
	var out any
	var held []net.Conn
	var err error
	switch name {
	case "echo":
		var a echoAttack
		if err = json.Unmarshal([]byte(arg), &a); err == nil {
			out, err = attackEcho(a)
		}
	case "conns":
		var a connsAttack
		if err = json.Unmarshal([]byte(arg), &a); err == nil {
			out, held, err = attackConns(a)
		}
	case "hog":
		var a hogAttack
		if err = json.Unmarshal([]byte(arg), &a); err == nil {
			out, held, err = attackHog(a)
		}
	default:
		err = fmt.Errorf("no attack %q", name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "attack:", err)
		return 2
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	_, _ = io.Copy(io.Discard, os.Stdin) // hold until the test is done
	for _, c := range held {
		c.Close()
	}
	return 0
}
