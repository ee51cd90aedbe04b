// Package testkit holds what tests of several packages need alike: a log
// destination safe for concurrent writers, polling of in-process state
// with a deadline, and a manual clock. Only tests import it.
package testkit

import (
	"bytes"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// Buffer is a bytes.Buffer safe for concurrent writers (a responder's
// goroutines logging at once).
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Poll checks cond (in-process state, not the network) every 10 ms until
// it holds or d passes, and reports whether it held.
func Poll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// counterRE is one key=integer pair of a logfmt line.
var counterRE = regexp.MustCompile(`\b([a-z_]+)=([0-9]+)\b`)

// LogCounters reads the integer key=value pairs of the last line of log
// that contains marker (a process's closing line, such as a reflector's
// "stamp reflector stopped"); nil when no line does.
func LogCounters(log []byte, marker string) map[string]int {
	var c map[string]int
	for _, line := range bytes.Split(log, []byte("\n")) {
		if !bytes.Contains(line, []byte(marker)) {
			continue
		}
		c = map[string]int{}
		for _, m := range counterRE.FindAllSubmatch(line, -1) {
			c[string(m[1])], _ = strconv.Atoi(string(m[2]))
		}
	}
	return c
}
