package lab

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/link"
)

// spokes is the three-site hub the tests use. Each site's uplink and
// downlink are alike; each queue holds about one BDP of the longest
// round trip whose bottleneck it can be: A 50 Mbit/s × 30 ms (A↔B),
// B 20 Mbit/s × 30 ms, C 100 Mbit/s × 24 ms (C↔B).
func spokes(name string) SitesConfig {
	site := func(n string, rate int64, delay time.Duration, queue int) Site {
		d := Direction{RateBps: rate, Delay: delay, QueueBytes: queue}
		return Site{Name: n, Up: d, Down: d}
	}
	return SitesConfig{Name: name, Seed: 1, Framing: FramingEthernet, Sites: []Site{
		site("a", 50e6, 5*time.Millisecond, 187_500),
		site("b", 20e6, 10*time.Millisecond, 75_000),
		site("c", 100e6, 2*time.Millisecond, 300_000),
	}}
}

func TestSitesValidate(t *testing.T) {
	ok := spokes("fleet")
	with := func(f func(c *SitesConfig)) SitesConfig {
		c := spokes("fleet")
		c.Sites = append([]Site(nil), c.Sites...)
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  SitesConfig
		want string // "" = valid
	}{
		{"three spokes", ok, ""},
		{"zero framing is ethernet", with(func(c *SitesConfig) { c.Framing = "" }), ""},
		{"no name", with(func(c *SitesConfig) { c.Name = "" }), "name"},
		{"long name", with(func(c *SitesConfig) { c.Name = "fleet12345" }), "1..8"},
		{"one site", with(func(c *SitesConfig) { c.Sites = c.Sites[:1] }), "want 2..254"},
		{"same site twice", with(func(c *SitesConfig) { c.Sites[1].Name = "a" }), "taken"},
		{"a two-ended lab's name", with(func(c *SitesConfig) { c.Sites[0].Name = "client" }), "taken"},
		{"upper case", with(func(c *SitesConfig) { c.Sites[0].Name = "A" }), "lower-case"},
		{"bad framing", with(func(c *SitesConfig) { c.Framing = "ppp" }), "framing"},
		{"bad link", with(func(c *SitesConfig) { c.Sites[2].Down.Loss = 2 }), "site c down: --loss"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("Validate() = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestSitesTruth: a path's base RTT is both access links' delays each
// way, its rate the slower of the source's uplink and the destination's
// downlink.
func TestSitesTruth(t *testing.T) {
	cfg := spokes("fleet")
	cfg.Sites = append(cfg.Sites, Site{Name: "d", Up: Direction{Delay: time.Millisecond}, Down: Direction{FRAccessBps: 2e6, FRCIRBps: 256e3}})
	cfg.Sites = append(cfg.Sites, Site{Name: "e"})
	for _, tc := range []struct {
		i, j int
		rtt  time.Duration
		rate int64
	}{
		{0, 1, 30 * time.Millisecond, 20e6},
		{1, 0, 30 * time.Millisecond, 20e6},
		{2, 0, 14 * time.Millisecond, 50e6},
		{0, 2, 14 * time.Millisecond, 50e6},
		{2, 3, 5 * time.Millisecond, 256e3}, // frame relay: the CIR
		{3, 4, time.Millisecond, 0},         // both unlimited
		{4, 2, 4 * time.Millisecond, 100e6},
	} {
		if rtt, rate := cfg.Truth(tc.i, tc.j); rtt != tc.rtt || rate != tc.rate {
			t.Errorf("Truth(%d, %d) = %v, %d bit/s; want %v, %d", tc.i, tc.j, rtt, rate, tc.rtt, tc.rate)
		}
	}
}

// ipv4 is a bare IPv4 packet of size bytes from site src to site dst of
// slot 7 (a site number of 0 or above 3 is an address no site has).
func ipv4(src, dst, size int) *link.Packet {
	b := make([]byte, size)
	b[0] = 0x45
	copy(b[12:], []byte{198, 19, 7, byte(src + 1)})
	copy(b[16:], []byte{198, 19, 7, byte(dst + 1)})
	return &link.Packet{Data: b}
}

// newHub builds the fabric of three sites in slot 7 without devices.
func newHub(sites ...Site) *hub {
	h := &hub{prefix: [3]byte{198, 19, 7}, n: len(sites)}
	for i, s := range sites {
		h.upSt, h.downSt = append(h.upSt, &DirStats{}), append(h.downSt, &DirStats{})
		h.up = append(h.up, Build(s.Up, FramingEthernet, uint64(i), nil, nil))
		h.down = append(h.down, Build(s.Down, FramingEthernet, uint64(i), nil, nil))
	}
	return h
}

type delivery struct {
	out  int
	src  byte
	time time.Duration
}

// run pushes each packet at its time (from its source) and advances the
// fabric to end, returning the deliveries in order.
func run(t *testing.T, h *hub, end time.Duration, at []time.Duration, pks []*link.Packet) []delivery {
	t.Helper()
	var got []delivery
	deliver := func(out int, pk *link.Packet) { got = append(got, delivery{out, pk.Data[15], pk.Time}) }
	for k, pk := range pks {
		h.advance(at[k], deliver)
		if !h.push(at[k], int(pk.Data[15])-1, pk) {
			t.Fatalf("packet %d refused", k)
		}
	}
	h.advance(end, deliver)
	if len(got) != len(pks) {
		t.Fatalf("%d of %d packets delivered", len(got), len(pks))
	}
	return got
}

// ser is a frame's serialisation time at rate, rounded up as the
// bottleneck rounds it.
func ser(ipBytes int, rate float64) time.Duration {
	return time.Duration(math.Ceil(float64(ipBytes+38) * 8 * 1e9 / rate))
}

// TestHubFabric checks the sites' fabric on virtual time: a packet
// crosses its source's uplink and its destination's downlink; every flow
// leaving a site shares its uplink, every flow entering one its
// downlink; uplinks hand packets to downlinks in time order however late
// the fabric is advanced; an address no site has is refused.
func TestHubFabric(t *testing.T) {
	const ms = time.Millisecond
	slow := Direction{RateBps: 10e6}
	t.Run("one packet", func(t *testing.T) {
		h := newHub(Site{Name: "a", Up: Direction{RateBps: 10e6, Delay: 5 * ms}}, Site{Name: "b", Down: Direction{RateBps: 20e6, Delay: 3 * ms}})
		got := run(t, h, time.Second, []time.Duration{0}, []*link.Packet{ipv4(0, 1, 1000)})
		if want := ser(1000, 10e6) + 5*ms + ser(1000, 20e6) + 3*ms; got[0].out != 1 || got[0].time != want {
			t.Fatalf("delivered %+v, want to site 1 at %v", got[0], want)
		}
	})
	t.Run("shared uplink", func(t *testing.T) {
		h := newHub(Site{Name: "a", Up: slow}, Site{Name: "b"}, Site{Name: "c"})
		var pks []*link.Packet
		for k := range 20 {
			pks = append(pks, ipv4(0, 1+k%2, 1000))
		}
		got := run(t, h, time.Second, make([]time.Duration, 20), pks)
		// One chain per pair would finish each destination's ten in 10 × ser.
		if last, want := got[19].time, 20*ser(1000, 10e6); last != want {
			t.Fatalf("the last of 20 packets to two sites left at %v, want %v (20 × serialisation)", last, want)
		}
	})
	t.Run("shared downlink", func(t *testing.T) {
		h := newHub(Site{Name: "a"}, Site{Name: "b"}, Site{Name: "c", Down: slow})
		var pks []*link.Packet
		for k := range 20 {
			pks = append(pks, ipv4(k%2, 2, 1000))
		}
		if last, want := run(t, h, time.Second, make([]time.Duration, 20), pks)[19].time, 20*ser(1000, 10e6); last != want {
			t.Fatalf("the last of 20 packets from two sites arrived at %v, want %v", last, want)
		}
	})
	t.Run("time order", func(t *testing.T) {
		// a's packet leaves a's uplink at 10 ms, b's (sent later) at 6 ms:
		// c's downlink serves b's first although a is site 0.
		h := newHub(Site{Name: "a", Up: Direction{Delay: 10 * ms}}, Site{Name: "b", Up: Direction{Delay: ms}}, Site{Name: "c", Down: slow})
		got := run(t, h, time.Second, []time.Duration{0, 5 * ms}, []*link.Packet{ipv4(0, 2, 1000), ipv4(1, 2, 1000)})
		if got[0].src != 2 || got[0].time != 6*ms+ser(1000, 10e6) || got[1].time != 10*ms+ser(1000, 10e6) {
			t.Fatalf("deliveries %+v: want b's at 6 ms + serialisation, then a's at 10 ms + serialisation", got)
		}
	})
	t.Run("no route", func(t *testing.T) {
		h := newHub(Site{Name: "a"}, Site{Name: "b"})
		v6 := ipv4(0, 1, 60)
		v6.Data[0] = 0x60
		other := ipv4(0, 1, 60)
		other.Data[18] = 8
		for _, pk := range []*link.Packet{ipv4(0, 2, 60), ipv4(0, -1, 60), v6, other, {Data: []byte{0x45}}} {
			if h.push(0, 0, pk) {
				t.Errorf("fabric took a packet to % x", pk.Data[min(16, len(pk.Data)-1):])
			}
		}
		if _, pending := h.next(); pending {
			t.Error("a refused packet is pending")
		}
	})
}
