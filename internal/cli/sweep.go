package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/units"
)

// Sweep limits: every sweep is bounded in points and in time.
const (
	maxSweepPoints   = 256
	maxSweepDuration = 60 * time.Second // per point
	// defaultSegment is what one "mss" means in a window: the TCP payload
	// of a 1500-byte IPv4 packet with the timestamp option (1500 − 20 IP −
	// 20 TCP − 12 options).
	defaultSegment = 1448
)

func init() {
	register(&command{
		name:    "sweep",
		summary: "window sweep (regions: linear, saturation, overflow) or message-length sweep",
		usage:   "window|msglen " + hostUsage + " [flags]",
		long: `sweep window: one TCP test per window, from --from to --to by --step, each
with an exact window (the sender keeps at most W bytes in flight). At each
window: goodput at the receiver; the spread of the instantaneous rate
(rates over --interval slices of the receiver's progress: mean, p10, p90,
standard deviation); loss (TCP retransmissions from the sender's
TCP_INFO); and the one-way delay increment of the data direction: small
UDP probes every --probe-gap during the load, each compared with the
least delay of a baseline of probes sent just before the load. Each probe
goes at a random time within its --probe-gap slot (seeded, --seed), so
the probes sample the queue's sawtooth at every phase rather than at one. The
responder stamps its receive time into each reply (echo mode 3), so the
forward and reverse delays are separated and the clocks need no
synchronisation: the offset cancels against the baseline.

Each window falls in one region:
  linear      window < BDP: goodput grows in proportion to the window
              (W x 8 / RTT), no queue, no delay increment
  transition  below both that line and the plateau: the window refills
              late because of delay jitter
  saturation  goodput flat at the bottleneck rate; the queue holds
              W - BDP, so the delay increment grows as (W - BDP) x 8 / rate
              (plus half a segment's time: the one in service)
  overflow    W > BDP + queue: the queue overflows, segments are lost
              and retransmitted, goodput saw-tooths below the plateau
and the boundaries say what the path is: bottleneck rate = the plateau;
BDP = where the line meets the plateau; bottleneck queue = window at the
overflow edge - BDP. See docs/sweep.md.

Windows are bytes (64KiB, 20000) or segments: Nmss = N x --segment bytes,
1448 by default (a 1500-byte MTU with TCP timestamps: 1500 - 20 IP - 20
TCP - 12 options). The congestion control defaults to reno: a loss-based
TCP whose only limit before loss is the window. bbr keeps its own bound on
bytes in flight (twice its estimate of the BDP) and would hide the
saturation and overflow regions.

sweep msglen: TCP and UDP goodput against the size of each write (64 B to
64 KiB by default), with the UDP sender's and receiver's rates side by
side: where they part, datagrams are lost (larger datagrams are lost more
often on a line that loses cells or fragments). UDP sizes above 65,507 B
are sent as 65,507 B.

Examples:
  fullpipe sweep window 198.18.0.2 --from 1mss --to 12mss --duration 4s
      scenario 7 on a 256 kbit/s frame-relay CIR with an 8 kB switch queue
  fullpipe sweep window 198.18.0.2 --from 1mss --to 64mss --step 2mss --dscp-probes 46,0
      probes alternate between DSCP 46 (EF) and 0 (best effort)
  fullpipe sweep window 198.18.0.2 --from 16KiB --to 512KiB --step 16KiB --direction down
  fullpipe sweep msglen 198.18.0.2 --udp-rate 50M --duration 2s`,
		flags: func(fs *pflag.FlagSet) func(env, []string) error {
			var cf clientFlags
			var from, to, step, direction, dscps, cc, sizes string
			var segment, udpRate int64
			var dur, gap, interval time.Duration
			var baseline int
			var seed uint64
			fs.StringVar(&from, "from", "1mss", "window: smallest window (bytes or Nmss)")
			fs.StringVar(&to, "to", "64mss", "window: largest window (bytes or Nmss)")
			fs.StringVar(&step, "step", "1mss", "window: step between windows (bytes or Nmss)")
			sizeVar(fs, &segment, "segment", "", defaultSegment, "window: bytes one mss stands for in --from/--to/--step")
			durVar(fs, &dur, "duration", "t", 5*time.Second, "length of each point (window or message size)")
			fs.StringVar(&direction, "direction", "up", "window: up (this host sends) or down (the responder sends)")
			fs.StringVar(&dscps, "dscp-probes", "0", "window: DSCP of the delay probes; two values A,B alternate")
			fs.StringVar(&cc, "cc", "reno", "window: congestion control of the sender (reno, cubic, bbr)")
			durVar(fs, &gap, "probe-gap", "", 100*time.Millisecond, "window: time between delay probes during the load")
			fs.Uint64Var(&seed, "seed", 1, "window: seed of the probes' random send times within each --probe-gap slot (replay with the same seed)")
			fs.IntVar(&baseline, "baseline-probes", 10, "window: idle probes before each load (20 ms apart) for the baseline")
			durVar(fs, &interval, "interval", "i", 200*time.Millisecond, "slice of the receiver's progress for the instantaneous rate")
			fs.StringVar(&sizes, "sizes", "64,128,256,512,1024,2048,4096,8192,16384,32768,65536", "msglen: write sizes in bytes")
			rateVar(fs, &udpRate, "udp-rate", "", 50_000_000, "msglen: UDP offered rate")
			cf.add(fs)
			return func(e env, args []string) error {
				if len(args) == 0 {
					return usagef("missing what to sweep: window or msglen")
				}
				what, rest := args[0], args[1:]
				t, err := cf.target(rest)
				if err != nil {
					return err
				}
				if dur < time.Second || dur > maxSweepDuration {
					return usagef("--duration %v: want 1s..%v per point", dur, maxSweepDuration)
				}
				if interval < 50*time.Millisecond || interval > dur/2 {
					return usagef("--interval %v: want 50ms..half of --duration", interval)
				}
				switch what {
				case "window":
					cfg := result.WindowSweepConfig{MSS: int(segment), Duration: dur, CC: cc, ProbeGap: gap,
						BaselineProbes: baseline, Settle: dur / 3, Interval: interval, Seed: seed}
					if err := windowFlags(&cfg, from, to, step, direction, dscps); err != nil {
						return err
					}
					if gap < 10*time.Millisecond || gap > dur/2 {
						return usagef("--probe-gap %v: want 10ms..half of --duration", gap)
					}
					if baseline < 3 || baseline > 100 {
						return usagef("--baseline-probes %d: want 3..100", baseline)
					}
					return runWindowSweep(e, cf, t, cfg)
				case "msglen":
					return runMsgLenSweep(e, cf, t, sizes, dur, udpRate, interval)
				}
				return usagef("unknown sweep %q: want window or msglen", what)
			}
		},
	})
}

// parseWindow reads a window in bytes or in segments ("12mss").
func parseWindow(s string, segment int64) (int64, error) {
	if n, ok := strings.CutSuffix(strings.ToLower(strings.TrimSpace(s)), "mss"); ok {
		k, err := strconv.ParseFloat(n, 64)
		if err != nil || k <= 0 {
			return 0, fmt.Errorf("%q: want a positive number before mss, e.g. 4mss", s)
		}
		return int64(k * float64(segment)), nil
	}
	return units.ParseSize(s)
}

func windowFlags(cfg *result.WindowSweepConfig, from, to, step, direction, dscps string) error {
	if cfg.MSS < 88 || cfg.MSS > 65495 {
		return usagef("--segment %d: want 88..65495 bytes", cfg.MSS)
	}
	seg := int64(cfg.MSS)
	lo, err := parseWindow(from, seg)
	if err != nil {
		return usagef("--from %v", err)
	}
	hi, err := parseWindow(to, seg)
	if err != nil {
		return usagef("--to %v", err)
	}
	st, err := parseWindow(step, seg)
	if err != nil {
		return usagef("--step %v", err)
	}
	switch {
	case lo <= 0 || st <= 0:
		return usagef("--from and --step must be positive")
	case hi < lo:
		return usagef("--to %d B is below --from %d B", hi, lo)
	case hi > 1<<30:
		return usagef("--to %d B is above the 1 GiB TCP maximum", hi)
	case (hi-lo)/st+1 > maxSweepPoints:
		return usagef("%d windows from %d B to %d B by %d B: at most %d; take a larger --step", (hi-lo)/st+1, lo, hi, st, maxSweepPoints)
	}
	for w := lo; w <= hi; w += st {
		cfg.Windows = append(cfg.Windows, int(w))
	}
	switch direction {
	case "up":
	case "down":
		cfg.Reverse = true
	default:
		return usagef("--direction %q: want up or down", direction)
	}
	for _, f := range strings.Split(dscps, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || d < 0 || d > 63 {
			return usagef("--dscp-probes %q: want one or two DSCP values 0..63, e.g. 46,0", dscps)
		}
		cfg.ProbeDSCPs = append(cfg.ProbeDSCPs, d)
	}
	if len(cfg.ProbeDSCPs) > 2 {
		return usagef("--dscp-probes %q: at most two classes", dscps)
	}
	return nil
}

func runWindowSweep(e env, cf clientFlags, t tester.Target, cfg result.WindowSweepConfig) error {
	n := len(cfg.Windows)
	progressf(e, false, "sweeping %d windows against %s, %v each (about %v in all) ...",
		n, tester.HostPort(t.Addr), cfg.Duration, (time.Duration(n) * (cfg.Duration + 2*time.Second)).Round(time.Second))
	progress := func(ev method.Event) {
		i, p := ev.Index, ev.Window
		if p == nil {
			return
		}
		fmt.Fprintf(e.stderr, "point %d/%d: window %s (%.1f mss): %s, %d retransmitted segments, delay increment %s\n",
			i+1, n, bytesExact(int64(p.WindowBytes)), p.WindowMSS, units.FormatRate(p.GoodputBps), p.RetransSegs, msOrDash(p.HasDelay, p.DelayIncrementMs))
	}
	res, err := method.RunWindowSweep(e.ctx, tester.Remote{T: t}, cfg, progress)
	if res != nil {
		withCommand(&res.Meta, e)
	}
	return finish(e, cf.json, res, res != nil, err, func(w io.Writer) { printWindowSweep(w, res) })
}

func msOrDash(ok bool, ms float64) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f ms", ms)
}

func printWindowSweep(w io.Writer, r *result.WindowSweep) {
	cfg := r.Config
	dir := "up (client sends)"
	if cfg.Reverse {
		dir = "down (responder sends)"
	}
	fmt.Fprintf(w, "Window sweep to %s, %s, cc %s, %v per window; 1 mss = %d B\n", r.Target, dir, orDash(cfg.CC), cfg.Duration, cfg.MSS)
	fmt.Fprintf(w, "%-22s %8s %14s %25s %9s %9s %13s %13s  %s\n",
		"window", "", "goodput", "rate p10..p90 (sd)", "retr", "loss", "delay incr", "model", "region")
	for _, p := range r.Points {
		region := p.Region
		if p.Partial {
			region = "(partial)"
		}
		model := ""
		if p.ModelIncrementMs > 0 {
			model = fmt.Sprintf("%.1f ms", p.ModelIncrementMs)
		}
		fmt.Fprintf(w, "%-22s %5.1f mss %14s %25s %5d seg %7.3f %% %13s %13s  %s\n",
			bytesExact(int64(p.WindowBytes)), p.WindowMSS, units.FormatRate(p.GoodputBps),
			fmt.Sprintf("%s..%s (%s)", units.FormatRate(p.RateP10Bps), units.FormatRate(p.RateP90Bps), units.FormatRate(p.RateStdDevBps)),
			p.RetransSegs, p.LossPct, msOrDash(p.HasDelay, p.DelayIncrementMs), model, region)
		if len(p.Classes) > 1 {
			for _, c := range p.Classes {
				fmt.Fprintf(w, "%24s DSCP %2d: forward %.1f ms (max %.1f ms), reverse %.1f ms (max %.1f ms), %d/%d replies\n",
					"", c.DSCP, c.FwdMedianMs, c.FwdMaxMs, c.RevMedianMs, c.RevMaxMs, c.Received, c.Sent)
			}
		}
	}
	a := r.Analysis
	fmt.Fprintln(w)
	if r.Partial {
		fmt.Fprintf(w, "PARTIAL: %s\n", r.PartialReason)
	}
	fmt.Fprintln(w, "What the regions say:")
	complete := 0
	for _, p := range r.Points {
		if !p.Partial {
			complete++
		}
	}
	if complete == 0 {
		fmt.Fprintln(w, "  nothing yet: no window was measured to its end")
		return
	}
	if a.PlateauBps > 0 {
		fmt.Fprintf(w, "  bottleneck rate (saturation plateau, TCP payload): %s\n", units.FormatRate(a.PlateauBps))
	}
	if a.RateFromDelayBps > 0 {
		fmt.Fprintf(w, "  bottleneck rate from the delay increments' slope: %s\n", units.FormatRate(a.RateFromDelayBps))
	}
	if a.LineRTTMs > 0 {
		fmt.Fprintf(w, "  linear region: goodput = W x 8 / %s, up to %s\n", units.FormatDuration(time.Duration(a.LineRTTMs*1e6)), bytesExact(int64(a.LinearEndBytes)))
	}
	if a.BDPBytes > 0 {
		fmt.Fprintf(w, "  BDP (where the line meets the plateau): %s\n", bytesExact(int64(a.BDPBytes)))
	}
	if a.OverflowEdgeBytes > 0 {
		fmt.Fprintf(w, "  overflow from %s (last lossless %s)\n", bytesExact(int64(a.OverflowEdgeBytes)), bytesExact(int64(a.LastLosslessBytes)))
		if a.BDPBytes > 0 {
			fmt.Fprintf(w, "  bottleneck queue = overflow edge - BDP: %s (at least %s), of TCP payload\n",
				bytesExact(int64(a.QueueBytes)), bytesExact(int64(a.QueueMinBytes)))
		}
	}
	for _, n := range a.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
}

func runMsgLenSweep(e env, cf clientFlags, t tester.Target, sizes string, dur time.Duration, udpRate int64, interval time.Duration) error {
	cfg := result.MsgLenSweepConfig{Duration: dur, UDPRateBps: udpRate, Interval: interval}
	for _, f := range strings.Split(sizes, ",") {
		n, err := units.ParseSize(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 16<<20 {
			return usagef("--sizes %q: want write sizes of 1 B to 16 MiB, comma-separated", sizes)
		}
		cfg.Sizes = append(cfg.Sizes, int(n))
	}
	if len(cfg.Sizes) > maxSweepPoints {
		return usagef("--sizes: at most %d sizes", maxSweepPoints)
	}
	if udpRate <= 0 {
		return usagef("--udp-rate must be positive")
	}
	n := len(cfg.Sizes)
	progressf(e, false, "sweeping %d write sizes against %s, TCP then UDP at %s, %v each (about %v in all) ...",
		n, tester.HostPort(t.Addr), units.FormatRate(float64(udpRate)), dur, (time.Duration(n) * 2 * (dur + time.Second)).Round(time.Second))
	progress := func(ev method.Event) {
		i, p := ev.Index, ev.MsgLen
		if p == nil {
			return
		}
		fmt.Fprintf(e.stderr, "size %d/%d: %s: TCP %s, UDP sent %s received %s\n", i+1, n, bytesExact(int64(p.SizeBytes)),
			units.FormatRate(p.TCPGoodputBps), units.FormatRate(p.UDPSenderBps), units.FormatRate(p.UDPReceiverBps))
	}
	res, err := method.RunMsgLenSweep(e.ctx, tester.Remote{T: t}, cfg, progress)
	if res != nil {
		withCommand(&res.Meta, e)
	}
	return finish(e, cf.json, res, res != nil, err, func(w io.Writer) { printMsgLenSweep(w, res) })
}

func printMsgLenSweep(w io.Writer, r *result.MsgLenSweep) {
	fmt.Fprintf(w, "Message-length sweep to %s (uploads)\n", r.Target)
	fmt.Fprintf(w, "%-22s %14s %14s %14s %16s %16s %10s\n", "write size", "TCP goodput", "TCP B/write", "UDP datagram", "UDP sender", "UDP receiver", "UDP loss")
	for _, p := range r.Points {
		mark := ""
		if p.Partial {
			mark = "  (partial)"
		}
		fmt.Fprintf(w, "%-22s %14s %12.0f B %12d B %16s %16s %8.3f %%%s\n", bytesExact(int64(p.SizeBytes)), units.FormatRate(p.TCPGoodputBps),
			p.TCPBytesPerWrite, p.UDPSizeBytes, units.FormatRate(p.UDPSenderBps), units.FormatRate(p.UDPReceiverBps), p.UDPLossPct, mark)
	}
	a := r.Analysis
	fmt.Fprintln(w)
	if r.Partial {
		fmt.Fprintf(w, "PARTIAL: %s\n", r.PartialReason)
	}
	if a.TCPKneeBytes > 0 {
		fmt.Fprintf(w, "TCP goodput reaches 90 %% of its best (%s) at writes of %s; larger writes gain little\n",
			units.FormatRate(a.TCPMaxBps), bytesExact(int64(a.TCPKneeBytes)))
	}
	if a.UDPDivergeBytes > 0 {
		fmt.Fprintf(w, "UDP: from %s datagrams on the receiver counts less than 99 %% of what was sent: datagrams are lost\n", bytesExact(int64(a.UDPDivergeBytes)))
	} else {
		fmt.Fprintln(w, "UDP: the receiver kept up with the sender at every size")
	}
}
