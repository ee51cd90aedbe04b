package rfc6349

import (
	"fmt"
	"strings"

	"github.com/fullpipe/fullpipe/internal/cpuload"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// SenderHost is what the sending end's host did during one step: its
// process's CPU use and, for a paced UDP stream, how well it kept its
// schedule. It tells a tester that could not keep up from a path that
// could not carry.
type SenderHost struct {
	Side vocab.Side    // the sending end
	CPU  *cpuload.Load // nil: not measured
	// A paced UDP stream's figures (Paced false: a TCP step).
	Paced     bool
	SentPct   float64 // sent, as % of the rate asked
	LatePct   float64 // % of datagrams sent more than 1 ms (and one gap) behind schedule
	MaxSlipMs float64 // the most a datagram was behind
	LostPct   float64 // % of datagrams lost on the way
}

// Limits for SenderHost. A paced sender that sends less than 98 % of its
// rate did not send the stream the step meant to send. One that fell
// behind its schedule caught up in bursts, which a queue may drop: only
// late datagrams can be lost that way, so when at least as many were
// late (more than 1 ms) as were lost, its bursts can account for the
// whole loss; when fewer, the path lost the rest.
//
// A sender kept from running for a fraction of the time can lose at most
// that fraction of its rate, so the CPU explains a shortfall of s % only
// when the sender was kept from running at least s % of the time (and at
// least the shortfall the verdict allows, 100 − MinActualPct): its
// threads waited that long for a CPU while the CPUs it may run on had no
// idle time left (95 % busy: /proc/stat's 10 ms ticks blur the last few
// per cent; threads waiting for each other on CPUs with idle time are not
// starved), or a hypervisor took that much (steal). A process that used
// 90 % of every CPU it may run on was saturated.
const (
	hostMinSentPct = 98
	hostFullPct    = 95
	hostBusyPct    = 90
)

// Limited says whether the sending host could account for a shortfall of
// shortPct % (at least the one the verdict allows, 100 − MinActualPct):
// the reasons in words, empty when it could not.
func (h SenderHost) Limited(shortPct float64) string {
	var why []string
	if h.Paced && h.SentPct > 0 && h.SentPct < hostMinSentPct {
		why = append(why, fmt.Sprintf("sent only %.1f %% of the rate asked", h.SentPct))
	}
	if h.Paced && h.LostPct > 0 && h.LatePct >= h.LostPct {
		why = append(why, fmt.Sprintf("sent %.1f %% of its datagrams more than 1 ms behind schedule (up to %.1f ms), catching up in bursts that can account for the %.2f %% lost", h.LatePct, h.MaxSlipMs, h.LostPct))
	}
	// A paced stream that kept its schedule was sent as asked, whatever
	// its CPU did; the CPU then only says why it could not.
	if h.Paced && len(why) == 0 {
		return ""
	}
	why = append(why, h.cpuReasons(shortPct)...)
	if len(why) == 0 {
		return ""
	}
	side := string(h.Side)
	if side == "" {
		side = "sender"
	}
	return "the " + side + " " + strings.Join(why, "; ")
}

func (h SenderHost) cpuReasons(shortPct float64) []string {
	c := h.CPU
	if c == nil {
		return nil
	}
	var why []string
	if w := waitShare(c); w >= shortPct && c.CPUsBusyPct >= hostFullPct {
		why = append(why, fmt.Sprintf("waited for a CPU %.0f %% of the time (its threads %.2f s in all in %.2f s, %.1f of them runnable on average), while its %d CPU(s) were %.0f %% busy and it used %.0f %% of a CPU: other work had the CPU",
			w, float64(c.WaitUs)/1e6, float64(c.ElapsedUs)/1e6, (c.CPUPct+c.WaitPct)/100, c.CPUs, c.CPUsBusyPct, c.CPUPct))
	}
	if c.StealPct >= shortPct {
		why = append(why, fmt.Sprintf("lost %.0f %% of its CPUs' time to the hypervisor (steal)", c.StealPct))
	}
	if c.CPUs > 0 && c.CPUPct >= hostBusyPct*float64(c.CPUs) {
		why = append(why, fmt.Sprintf("used %.0f %% of its %d CPU(s): it ran out of CPU", c.CPUPct, c.CPUs))
	}
	return why
}

// waitShare is the share of the time a runnable thread of the process
// waited for a CPU, in %: the wait summed over threads divided by how
// many were runnable on average ((CPU + wait) / elapsed, at least one).
// Four threads each waiting 2 % of the time sum to 8 % but were each held
// back 2 %; one starved thread waiting 99 % is 99 %.
func waitShare(c *cpuload.Load) float64 {
	return c.WaitPct / max(1, (c.CPUPct+c.WaitPct)/100)
}
