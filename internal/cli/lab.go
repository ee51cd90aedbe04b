package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/units"
)

// linkOpt is one path property, settable for both directions (--NAME) or
// one (--up-NAME, --down-NAME).
type linkOpt struct {
	name, usage string
	isBool      bool
	set         func(d *lab.Direction, v string) error
}

func parseProb(v string) (float64, error) {
	pct := strings.HasSuffix(v, "%")
	f, err := strconv.ParseFloat(strings.TrimSuffix(v, "%"), 64)
	if err != nil {
		return 0, fmt.Errorf("%q: want a probability such as 0.001 or 0.1%%", v)
	}
	if pct {
		f /= 100
	}
	return f, nil
}

var linkOpts = []linkOpt{
	{name: "rate", usage: "bottleneck rate (serialisation), e.g. 100M; 0 = unlimited", set: func(d *lab.Direction, v string) (err error) {
		d.RateBps, err = units.ParseRate(v)
		return
	}},
	{name: "rtt", usage: "round-trip delay; half of it each way (same as --delay RTT/2)", set: func(d *lab.Direction, v string) error {
		r, err := units.ParseDuration(v)
		d.Delay = r / 2
		return err
	}},
	{name: "delay", usage: "one-way delay", set: func(d *lab.Direction, v string) (err error) {
		d.Delay, err = units.ParseDuration(v)
		return
	}},
	{name: "jitter", usage: "extra delay drawn uniformly from [0, D); no reordering unless --reorder", set: func(d *lab.Direction, v string) (err error) {
		d.Jitter, err = units.ParseDuration(v)
		return
	}},
	{name: "reorder", isBool: true, usage: "let jitter reorder packets", set: func(d *lab.Direction, v string) error { d.Reorder = v == "true"; return nil }},
	{name: "queue", usage: "drop-tail queue before the bottleneck, in bytes (default: unlimited)", set: func(d *lab.Direction, v string) error {
		n, err := units.ParseSize(v)
		d.QueueBytes = int(n)
		return err
	}},
	{name: "queue-packets", usage: "drop-tail queue limit in packets", set: func(d *lab.Direction, v string) (err error) {
		d.QueuePackets, err = strconv.Atoi(v)
		return
	}},
	{name: "police", usage: "token-bucket policer RATE[,BURST]: drops what exceeds, no queue (burst default: 10 ms at RATE, at least 3,000 B)", set: func(d *lab.Direction, v string) error {
		r, b, _ := strings.Cut(v, ",")
		rate, err := units.ParseRate(r)
		if err != nil {
			return err
		}
		d.PoliceBps = rate
		d.PoliceBurst = max(3000, int(rate/8/100))
		if b != "" {
			n, err := units.ParseSize(b)
			if err != nil {
				return err
			}
			d.PoliceBurst = int(n)
		}
		return nil
	}},
	{name: "loss", usage: "random loss probability, e.g. 0.001 or 0.1%", set: func(d *lab.Direction, v string) (err error) {
		d.Loss, err = parseProb(v)
		return
	}},
	{name: "loss-burst", usage: "mean loss burst length in packets (Gilbert-Elliott, with --loss as the mean loss)", set: func(d *lab.Direction, v string) (err error) {
		d.LossBurst, err = strconv.ParseFloat(v, 64)
		return
	}},
	{name: "ber", usage: "bit error ratio: a packet of S bytes is lost with probability 1-(1-BER)^(8S)", set: func(d *lab.Direction, v string) (err error) {
		d.BER, err = strconv.ParseFloat(v, 64)
		return
	}},
	{name: "mtu", usage: "path MTU in bytes: larger packets are dropped (a PMTUD black hole unless --icmp)", set: func(d *lab.Direction, v string) (err error) {
		d.MTU, err = strconv.Atoi(v)
		return
	}},
	{name: "icmp", isBool: true, usage: "answer MTU drops with ICMP fragmentation-needed (RFC 1191)", set: func(d *lab.Direction, v string) error { d.ICMP = v == "true"; return nil }},
	{name: "atm", isBool: true, usage: "ATM cell mode: AAL5 (packet + 8 B, padded to 48 B) in 53-byte cells; --rate counts cells", set: func(d *lab.Direction, v string) error { d.ATM = v == "true"; return nil }},
	{name: "cell-loss", usage: "ATM cell loss probability; one lost cell destroys its packet", set: func(d *lab.Direction, v string) (err error) {
		d.CellLoss, err = parseProb(v)
		return
	}},
	{name: "frame-relay", usage: "ACCESS,CIR,TXQ: access rate, committed rate, switch transmit queue bytes", set: func(d *lab.Direction, v string) error {
		f := strings.Split(v, ",")
		if len(f) != 3 {
			return fmt.Errorf("%q: want ACCESS,CIR,TXQ such as 1.5M,256k,38kB", v)
		}
		a, err := units.ParseRate(f[0])
		if err != nil {
			return err
		}
		c, err := units.ParseRate(f[1])
		if err != nil {
			return err
		}
		q, err := units.ParseSize(f[2])
		if err != nil {
			return err
		}
		d.FRAccessBps, d.FRCIRBps, d.FRQueueBytes = a, c, int(q)
		return nil
	}},
	{name: "priority", isBool: true, usage: "two classes by DSCP (EF 46, CS5-CS7 high), separate queues, strict priority", set: func(d *lab.Direction, v string) error { d.Priority = v == "true"; return nil }},
}

// linkFlags registers every link option three times and applies them in
// order: profile, both directions, then per-direction overrides.
type linkFlags struct {
	strs  map[string]*string
	bools map[string]*bool
	fs    *pflag.FlagSet
}

func addLinkFlags(fs *pflag.FlagSet) *linkFlags {
	lf := &linkFlags{strs: map[string]*string{}, bools: map[string]*bool{}, fs: fs}
	for _, prefix := range []string{"", "up-", "down-"} {
		for _, o := range linkOpts {
			name := prefix + o.name
			usage := o.usage
			if prefix != "" {
				usage = "like --" + o.name + ", " + strings.TrimSuffix(prefix, "-") + " direction only"
				defer fs.MarkHidden(name) // listed once in --help, below
			}
			if o.isBool {
				lf.bools[name] = fs.Bool(name, false, usage)
			} else {
				lf.strs[name] = fs.String(name, "", usage)
			}
		}
	}
	return lf
}

// apply sets up and down from the flags the user gave.
func (lf *linkFlags) apply(up, down *lab.Direction) error {
	for _, prefix := range []string{"", "up-", "down-"} {
		for _, o := range linkOpts {
			name := prefix + o.name
			if !lf.fs.Changed(name) {
				continue
			}
			v := ""
			if o.isBool {
				v = strconv.FormatBool(*lf.bools[name])
			} else {
				v = *lf.strs[name]
			}
			targets := map[string][]*lab.Direction{"": {up, down}, "up-": {up}, "down-": {down}}[prefix]
			for _, d := range targets {
				if err := o.set(d, v); err != nil {
					return usagef("--%s: %v", name, err)
				}
			}
		}
	}
	return nil
}

const labLong = `Builds an emulated network path on this machine: two network namespaces,
NAME-client (198.18.K.1) and NAME-server (198.18.K.2), each with a TUN
device, and a forwarder in this process that moves every packet through a
chain of link stages: policer, random loss, bit errors, ATM cell loss,
MTU, the bottleneck queue and rate, then delay. The path's properties are
exact: the forwarder runs them as a discrete-event simulation on a
monotonic clock, and only the hand-off to the kernel is as late as the
thread wakes (about 0.1 ms).

  fullpipe lab up --rate 100M --rtt 20ms --queue 375kB     # scenario 1's path
  fullpipe lab up --profile smallbuf --detach              # run in the background
  fullpipe lab exec server -- fullpipe serve &             # a responder inside
  fullpipe lab exec client -- fullpipe tcp 198.18.0.2 --window 64KiB
  fullpipe lab stats                                       # forwarded, drops by cause, queue
  fullpipe lab down

Link options apply to both directions; --up-NAME and --down-NAME set one
direction (up = client to server), e.g. --down-rate 8M --up-rate 1M for
ADSL. The bottleneck counts Ethernet framing (38 B per packet) unless
--framing none. Randomness (loss, BER, jitter) is seeded; the seed is
printed and --seed replays it. Needs root.`

func init() {
	register(&command{
		name:    "lab",
		summary: "emulated network paths in namespaces: lab up|down|exec|stats|profiles",
		usage:   "up|down|exec|stats|profiles [flags]",
		long:    labLong,
		flags: func(fs *pflag.FlagSet) func(env, []string) error {
			var name, profile, framing string
			var detach, asJSON bool
			var seed uint64
			fs.StringVar(&name, "name", "fp", "lab name: namespaces NAME-client and NAME-server")
			fs.StringVar(&profile, "profile", "", "start from a preset path (see `fullpipe lab profiles`)")
			fs.StringVar(&framing, "framing", "ethernet", "bytes the bottleneck counts per packet: ethernet (+38 B) or none (IP only)")
			fs.Uint64Var(&seed, "seed", 0, "random seed for loss, BER and jitter (default: random, printed)")
			fs.BoolVar(&detach, "detach", false, "up: return once the path is up, leaving it running in the background")
			fs.BoolVar(&asJSON, "json", false, "print as JSON")
			lf := addLinkFlags(fs)
			return func(e env, args []string) error {
				if len(args) == 0 {
					return usagef("want a subcommand: up, down, exec, stats or profiles")
				}
				switch args[0] {
				case "up":
					cfg := lab.Config{Name: name, Seed: seed, Framing: lab.Framing(framing), Profile: profile}
					if profile != "" {
						p, ok := lab.Profiles[profile]
						if !ok {
							return usagef("unknown profile %q (see `fullpipe lab profiles`)", profile)
						}
						cfg.Up, cfg.Down = p.Up, p.Down
					}
					if err := lf.apply(&cfg.Up, &cfg.Down); err != nil {
						return err
					}
					if !fs.Changed("seed") {
						cfg.Seed = rand.Uint64() >> 12
					}
					if err := cfg.Validate(); err != nil {
						return usagef("%v", err)
					}
					if detach && os.Getenv(childEnv) == "" {
						return labDetach(e, name, asJSON)
					}
					return labUp(e, cfg, asJSON)
				case "down":
					if _, err := lab.ReadState(name); err != nil {
						fmt.Fprintf(e.stderr, "no lab %q was running; removing anything it left\n", name)
					}
					return lab.Cleanup(name)
				case "exec":
					if len(args) < 3 || (args[1] != "client" && args[1] != "server") {
						return usagef("want: lab exec client|server -- CMD [ARGS]")
					}
					return lab.Exec(name+"-"+args[1], args[2:])
				case "stats":
					st, err := lab.ReadStats(name)
					if err != nil {
						return err
					}
					if asJSON {
						return writeJSON(e.stdout, st)
					}
					printLabStats(e.stdout, st)
					return nil
				case "profiles":
					if asJSON {
						return writeJSON(e.stdout, lab.Profiles)
					}
					for _, n := range lab.ProfileNames() {
						p := lab.Profiles[n]
						fmt.Fprintf(e.stdout, "%-11s %s\n            %s\n", n, p.Teaches, describe(p.Up))
					}
					return nil
				}
				return usagef("unknown lab subcommand %q", args[0])
			}
		},
	})
}

const childEnv = "FULLPIPE_LAB_CHILD"

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func labUp(e env, cfg lab.Config, asJSON bool) error {
	l, err := lab.Up(cfg)
	if err != nil {
		return exitError{ExitRefused, err}
	}
	defer l.Close()
	if asJSON {
		if err := writeJSON(e.stdout, l.State); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(e.stdout, "lab %s up: client %s in netns %s, server %s in netns %s, seed %d\n  up:   %s\n  down: %s\n",
			cfg.Name, l.Client.Addr, l.Client.NetNS, l.Server.Addr, l.Server.NetNS, cfg.Seed, describe(cfg.Up), describe(cfg.Down))
		if os.Getenv(childEnv) == "" {
			fmt.Fprintf(e.stdout, "  try: fullpipe lab exec client -- ping %s    (Ctrl-C here takes it down)\n", l.Server.Addr)
		}
	}
	if f, ok := e.stdout.(*os.File); ok {
		_ = f.Sync()
	}
	return l.Run(e.ctx)
}

// labDetach runs `lab up` again as a background child and returns once
// the child has published the lab's state.
func labDetach(e env, name string, asJSON bool) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(lab.StateDir, 0o755); err != nil {
		return err
	}
	logPath := lab.StateDir + "/" + name + ".log"
	logf, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(self, e.args[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	_ = os.Remove(lab.StateDir + "/" + name + ".json")
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.After(15 * time.Second)
	for {
		if st, err := lab.ReadState(name); err == nil && st.PID == cmd.Process.Pid {
			if asJSON {
				return writeJSON(e.stdout, st)
			}
			fmt.Fprintf(e.stdout, "lab %s up in the background (pid %d): client %s (netns %s), server %s (netns %s), seed %d; log %s; `fullpipe lab down --name %s` removes it\n",
				name, st.PID, st.Client.Addr, st.Client.NetNS, st.Server.Addr, st.Server.NetNS, st.Seed, logPath, name)
			return nil
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			return errors.New("lab did not come up: " + strings.TrimSpace(string(b)))
		case <-deadline:
			_ = cmd.Process.Kill()
			return errors.New("lab did not come up within 15 s; see " + logPath)
		case <-e.ctx.Done():
			_ = cmd.Process.Kill()
			return e.ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func describe(d lab.Direction) string {
	var p []string
	if d.RateBps > 0 {
		r := "rate " + units.FormatRate(float64(d.RateBps))
		if d.ATM {
			r += " (ATM cells)"
		}
		p = append(p, r)
	} else if d.FRAccessBps == 0 {
		p = append(p, "rate unlimited")
	}
	if d.FRAccessBps > 0 {
		p = append(p, fmt.Sprintf("frame relay access %s, CIR %s, switch queue %s", units.FormatRate(float64(d.FRAccessBps)),
			units.FormatRate(float64(d.FRCIRBps)), bytesExact(int64(d.FRQueueBytes))))
	}
	p = append(p, "one-way delay "+units.FormatDuration(d.Delay))
	if d.Jitter > 0 {
		p = append(p, "jitter "+units.FormatDuration(d.Jitter))
	}
	if d.QueueBytes > 0 {
		p = append(p, "queue "+bytesExact(int64(d.QueueBytes)))
	}
	if d.QueuePackets > 0 {
		p = append(p, fmt.Sprintf("queue %d packets", d.QueuePackets))
	}
	if d.QueueBytes == 0 && d.QueuePackets == 0 && (d.RateBps > 0 || d.FRAccessBps > 0) {
		p = append(p, "queue unlimited")
	}
	if d.PoliceBps > 0 {
		p = append(p, fmt.Sprintf("policer %s burst %s", units.FormatRate(float64(d.PoliceBps)), bytesExact(int64(d.PoliceBurst))))
	}
	if d.Loss > 0 {
		p = append(p, fmt.Sprintf("loss %.4g %%", d.Loss*100))
		if d.LossBurst > 0 {
			p = append(p, fmt.Sprintf("mean burst %.3g packets", d.LossBurst))
		}
	}
	if d.BER > 0 {
		p = append(p, fmt.Sprintf("BER %.3g", d.BER))
	}
	if d.CellLoss > 0 {
		p = append(p, fmt.Sprintf("cell loss %.3g", d.CellLoss))
	}
	if d.MTU > 0 {
		m := fmt.Sprintf("MTU %d B", d.MTU)
		if d.ICMP {
			m += " with ICMP"
		} else {
			m += " (black hole)"
		}
		p = append(p, m)
	}
	if d.Priority {
		p = append(p, "2 priority classes")
	}
	return strings.Join(p, ", ")
}

func printLabStats(w io.Writer, s *lab.Stats) {
	fmt.Fprintf(w, "lab %s, up %.1f s\n", s.Name, s.UptimeS)
	for _, d := range []struct {
		n string
		s lab.DirectionStats
	}{{"up", s.Up}, {"down", s.Down}} {
		var drops []string
		for _, c := range []string{"queue", "policer", "loss", "ber", "mtu", "cell"} {
			drops = append(drops, fmt.Sprintf("%s %d", c, d.s.Drops[c]))
		}
		fmt.Fprintf(w, "  %-4s in %d packets (%s), forwarded %d packets (%s); drops: %s; queue now %s, max %s",
			d.n, d.s.RxPackets, units.FormatBytes(float64(d.s.RxBytes)), d.s.TxPackets, units.FormatBytes(float64(d.s.TxBytes)),
			strings.Join(drops, ", "), bytesExact(int64(d.s.QueueBytes)), bytesExact(int64(d.s.QueueMaxBytes)))
		if d.s.ICMPSent > 0 {
			fmt.Fprintf(w, "; ICMP frag-needed sent %d", d.s.ICMPSent)
		}
		fmt.Fprintln(w)
	}
}
