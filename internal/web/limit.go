package web

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Failed logins allowed per address in a window; more are refused (429)
// until it passes. Tokens are 128-bit random, so this is not about
// guessing them, but about a client making the store look up one bad
// token after another.
const (
	loginFailures = 10
	loginWindow   = time.Minute
	maxLimited    = 10_000 // addresses tracked; past it, the table starts again
)

// limiter counts failed logins per address; mu guards m.
type limiter struct {
	mu sync.Mutex
	m  map[string]*failures
}

type failures struct {
	n     int
	since time.Time
}

func newLimiter() *limiter { return &limiter{m: map[string]*failures{}} }

// host is the request's address without its port.
func host(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}

// blocked says whether addr failed too often within the window.
func (l *limiter) blocked(addr string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.m[addr]
	return f != nil && now.Sub(f.since) < loginWindow && f.n >= loginFailures
}

// fail counts one failed login of addr.
func (l *limiter) fail(addr string, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.m) >= maxLimited {
		l.m = map[string]*failures{}
	}
	f := l.m[addr]
	if f == nil || now.Sub(f.since) >= loginWindow {
		f = &failures{since: now}
		l.m[addr] = f
	}
	f.n++
}
