package fleet

import (
	"testing"
	"time"
)

func TestStateAt(t *testing.T) {
	now := time.Unix(1000, 0)
	cases := []struct {
		a    Agent
		want AgentState
	}{
		{Agent{State: AgentNew}, AgentNew},
		{Agent{State: AgentRevoked, LastSeen: now}, AgentRevoked},
		{Agent{LastSeen: now.Add(-10 * time.Second)}, AgentUp},
		{Agent{LastSeen: now.Add(-31 * time.Second)}, AgentDown},
	}
	for _, c := range cases {
		if got := StateAt(c.a, now, 30*time.Second); got != c.want {
			t.Errorf("%+v: %s, want %s", c.a, got, c.want)
		}
	}
}
