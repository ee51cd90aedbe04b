package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"
)

// Log rate limits: each client address may cause at most
// DefaultLogLinesPerAddr lines per logWindow; the rest are counted and
// summed up in one line per address when its window ends.
const (
	DefaultLogLinesPerAddr = 20
	logWindow              = 10 * time.Second
	// logMaxAddrs bounds the addresses tracked at once; beyond it, new
	// addresses share one budget under otherAddrs.
	logMaxAddrs = 1 << 16
	otherAddrs  = "other addresses"
)

// logLimiter counts log lines per client address (the "peer" attribute)
// over fixed windows. Its clock is injected (now).
type logLimiter struct {
	base    slog.Handler // for summary lines, without any With attributes
	perAddr int
	window  time.Duration
	now     func() time.Time

	mu    sync.Mutex // guards addrs
	addrs map[string]*addrLines
}

type addrLines struct {
	start      time.Time // of the current window
	passed     int
	suppressed int
}

func newLogLimiter(base slog.Handler, perAddr int, window time.Duration, now func() time.Time) *logLimiter {
	return &logLimiter{base: base, perAddr: perAddr, window: window, now: now, addrs: map[string]*addrLines{}}
}

// handler is the slog.Handler that applies the limiter.
func (l *logLimiter) handler() slog.Handler { return &limitHandler{Handler: l.base, l: l} }

// allow counts one line from addr and reports whether it may pass. When
// addr's previous window ended with lines held back, it first logs them.
func (l *logLimiter) allow(addr string) bool {
	now := l.now()
	l.mu.Lock()
	a := l.addrs[addr]
	if a == nil && len(l.addrs) >= logMaxAddrs {
		addr = otherAddrs
		a = l.addrs[addr]
	}
	var summary int
	if a == nil || now.Sub(a.start) >= l.window {
		if a != nil {
			summary = a.suppressed
		}
		a = &addrLines{start: now}
		l.addrs[addr] = a
	}
	ok := a.passed < l.perAddr
	if ok {
		a.passed++
	} else {
		a.suppressed++
	}
	l.mu.Unlock()
	l.summarize(addr, summary, now)
	return ok
}

// flush logs the lines held back in every window that has ended (every
// window, with all) and forgets those addresses. routineLogFlush calls it
// every window, and with all when the responder stops.
func (l *logLimiter) flush(all bool) {
	now := l.now()
	type held struct {
		addr string
		n    int
	}
	var out []held
	l.mu.Lock()
	for addr, a := range l.addrs {
		if all || now.Sub(a.start) >= l.window {
			out = append(out, held{addr, a.suppressed})
			delete(l.addrs, addr)
		}
	}
	l.mu.Unlock()
	for _, h := range out {
		l.summarize(h.addr, h.n, now)
	}
}

func (l *logLimiter) summarize(addr string, n int, now time.Time) {
	if n == 0 {
		return
	}
	r := slog.NewRecord(now, slog.LevelWarn, fmt.Sprintf("suppressed %d lines from %s", n, addr), 0)
	r.AddAttrs(slog.String("peer", addr), slog.Int("suppressed", n))
	if l.base.Enabled(context.Background(), slog.LevelWarn) {
		_ = l.base.Handle(context.Background(), r)
	}
}

// limitHandler passes a record on when its address is within its limit.
// The address is the "peer" attribute, given to With or to the record.
type limitHandler struct {
	slog.Handler
	l    *logLimiter
	addr string
}

func (h *limitHandler) WithAttrs(as []slog.Attr) slog.Handler {
	addr := h.addr
	for _, a := range as {
		if a.Key == "peer" {
			addr = peerKey(a.Value)
		}
	}
	return &limitHandler{Handler: h.Handler.WithAttrs(as), l: h.l, addr: addr}
}

func (h *limitHandler) WithGroup(name string) slog.Handler {
	return &limitHandler{Handler: h.Handler.WithGroup(name), l: h.l, addr: h.addr}
}

func (h *limitHandler) Handle(ctx context.Context, r slog.Record) error {
	addr := h.addr
	if addr == "" {
		r = peerAsString(r, &addr)
	}
	if addr != "" && !h.l.allow(addr) {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// peerAsString finds r's "peer" attribute and sets *addr to its key. A
// net.Addr value becomes its "host:port" string, so text and JSON logs
// spell peers alike.
func peerAsString(r slog.Record, addr *string) slog.Record {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "peer" {
			*addr = peerKey(a.Value)
			if na, ok := a.Value.Resolve().Any().(net.Addr); ok {
				a.Value = slog.StringValue(na.String())
			}
		}
		out.AddAttrs(a)
		return true
	})
	return out
}

// peerKey is the IP address of a "peer" attribute (a net.Addr or a
// "host:port" string); the port does not count, a client has many.
func peerKey(v slog.Value) string {
	v = v.Resolve()
	if a, ok := v.Any().(net.Addr); ok {
		if ip := addrIP(a); ip.IsValid() {
			return ip.String()
		}
	}
	s := v.String()
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().String()
	}
	return s
}

// routineLogFlush logs held-back lines every window until ctx ends, then
// once more.
func (s *Server) routineLogFlush(ctx context.Context) {
	defer s.wg.Done()
	t := time.NewTicker(s.logLim.window)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			s.logLim.flush(false)
		case <-ctx.Done():
			s.logLim.flush(true)
			return
		}
	}
}
