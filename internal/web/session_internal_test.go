package web

import (
	"testing"
	"time"
)

// TestSessionsPerToken: 10,000 logins of one token (before, they filled
// the table and logged everyone else out) leave that token its newest
// maxTokenSessions logins and every other token's login alive; a full
// table drops its oldest logins, not random ones.
func TestSessionsPerToken(t *testing.T) {
	ss := newSessions()
	t0 := time.Unix(1_000_000, 0)
	other, _ := ss.add("other", t0)
	var last string
	for i := range 10_000 {
		last, _ = ss.add("flood", t0.Add(time.Duration(i+1)*time.Millisecond))
	}
	now := t0.Add(time.Minute)
	if ss.get(other, now) == nil {
		t.Errorf("another token's login was dropped by one token's 10,000")
	}
	if ss.get(last, now) == nil {
		t.Errorf("the flooding token's newest login is gone")
	}
	if n := len(ss.m); n != 1+maxTokenSessions {
		t.Errorf("%d sessions, want the other one and %d of the flooding token", n, maxTokenSessions)
	}

	full := newSessions()
	first, _ := full.add("t0", t0)
	for i := 1; i < maxSessions; i++ {
		full.add(string(rune('a'+i%26))+itoa(i), t0.Add(time.Duration(i)*time.Millisecond))
	}
	newest, _ := full.add("late", t0.Add(time.Hour))
	if full.get(first, t0.Add(2*time.Hour)) != nil || full.get(newest, t0.Add(2*time.Hour)) == nil || len(full.m) != maxSessions {
		t.Errorf("a full table: the oldest login kept %v, the newest %v, %d sessions; want the oldest dropped",
			full.m[first] != nil, full.m[newest] != nil, len(full.m))
	}
}
