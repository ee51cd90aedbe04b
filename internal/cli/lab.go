package cli

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/report"
	"github.com/fullpipe/fullpipe/internal/units"
)

// linkOpt is one path property, settable for both directions (--NAME) or
// one (--up-NAME, --down-NAME).
type linkOpt struct {
	name, usage string
	meta        string // the unit or form of its value, in the help
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

// linkOptions are the link options, in the order lab up applies them: one
// table, one entry per option with its parser, so it runs long.
func linkOptions() []linkOpt {
	return []linkOpt{
		{name: "rate", meta: "bit/s", usage: "bottleneck rate (serialisation), e.g. 100M; 0 = unlimited", set: func(d *lab.Direction, v string) (err error) {
			d.RateBps, err = units.ParseRate(v)
			return
		}},
		{name: "rtt", meta: "duration", usage: "round-trip delay; half of it each way (same as --delay RTT/2)", set: func(d *lab.Direction, v string) error {
			r, err := units.ParseDuration(v)
			d.Delay = r / 2
			return err
		}},
		{name: "delay", meta: "duration", usage: "one-way delay", set: func(d *lab.Direction, v string) (err error) {
			d.Delay, err = units.ParseDuration(v)
			return
		}},
		{name: "jitter", meta: "duration", usage: "extra delay drawn uniformly from [0, D); no reordering unless --reorder", set: func(d *lab.Direction, v string) (err error) {
			d.Jitter, err = units.ParseDuration(v)
			return
		}},
		{name: "reorder", isBool: true, usage: "let jitter reorder packets", set: func(d *lab.Direction, v string) error { d.Reorder = v == "true"; return nil }},
		{name: "queue", meta: "bytes", usage: "drop-tail queue before the bottleneck, in bytes (default: unlimited)", set: func(d *lab.Direction, v string) error {
			n, err := units.ParseSize(v)
			d.QueueBytes = int(n)
			return err
		}},
		{name: "queue-packets", meta: "packets", usage: "drop-tail queue limit in packets", set: func(d *lab.Direction, v string) (err error) {
			d.QueuePackets, err = strconv.Atoi(v)
			return
		}},
		{name: "police", meta: "bit/s[,bytes]", usage: "token-bucket policer RATE[,BURST]: drops what exceeds, no queue (burst default: 10 ms at RATE, at least 3,000 B)", set: func(d *lab.Direction, v string) error {
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
		{name: "loss", meta: "probability", usage: "random loss probability, e.g. 0.001 or 0.1%", set: func(d *lab.Direction, v string) (err error) {
			d.Loss, err = parseProb(v)
			return
		}},
		{name: "loss-burst", meta: "packets", usage: "mean loss burst length in packets (Gilbert-Elliott, with --loss as the mean loss)", set: func(d *lab.Direction, v string) (err error) {
			d.LossBurst, err = strconv.ParseFloat(v, 64)
			return
		}},
		{name: "ber", meta: "ratio", usage: "bit error ratio: a packet of S bytes is lost with probability 1-(1-BER)^(8S)", set: func(d *lab.Direction, v string) (err error) {
			d.BER, err = strconv.ParseFloat(v, 64)
			return
		}},
		{name: "mtu", meta: "bytes", usage: "path MTU in bytes: larger packets are dropped (a PMTUD black hole unless --icmp)", set: func(d *lab.Direction, v string) (err error) {
			d.MTU, err = strconv.Atoi(v)
			return
		}},
		{name: "icmp", isBool: true, usage: "answer MTU drops with ICMP fragmentation-needed (RFC 1191)", set: func(d *lab.Direction, v string) error { d.ICMP = v == "true"; return nil }},
		{name: "atm", isBool: true, usage: "ATM cell mode: AAL5 (packet + 8 B, padded to 48 B) in 53-byte cells; --rate counts cells", set: func(d *lab.Direction, v string) error { d.ATM = v == "true"; return nil }},
		{name: "cell-loss", meta: "probability", usage: "ATM cell loss probability; one lost cell destroys its packet", set: func(d *lab.Direction, v string) (err error) {
			d.CellLoss, err = parseProb(v)
			return
		}},
		{name: "frame-relay", meta: "bit/s,bit/s,bytes", usage: "ACCESS,CIR,TXQ: access rate, committed rate, switch transmit queue bytes", set: func(d *lab.Direction, v string) error {
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
		for _, o := range linkOptions() {
			name := prefix + o.name
			usage := o.usage
			if prefix != "" {
				usage = "like --" + o.name + ", " + strings.TrimSuffix(prefix, "-") + " direction only"
				defer fs.MarkHidden(name) // listed once in --help, below
			}
			if o.isBool {
				lf.bools[name] = fs.Bool(name, false, usage)
			} else {
				lf.strs[name] = new(string)
				fs.Var(text(lf.strs[name], "", o.meta), name, usage)
			}
		}
	}
	return lf
}

// apply sets up and down from the flags the user gave.
func (lf *linkFlags) apply(up, down *lab.Direction) error {
	for _, prefix := range []string{"", "up-", "down-"} {
		for _, o := range linkOptions() {
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
thread wakes (about 0.1 ms). docs/lab.md has the details.

Link options apply to both directions; --up-NAME and --down-NAME set one
direction (up = client to server), e.g. --down-rate 8M --up-rate 1M for
ADSL. The bottleneck counts Ethernet framing (38 B per packet) unless
--framing none. Randomness (loss, BER, jitter) is seeded; the seed is
printed and --seed replays it. Needs root.`

const labExample = `  fullpipe lab up --rate 100M --rtt 20ms --queue 375kB     # scenario 1's path
  fullpipe lab up --profile smallbuf --detach              # run in the background
  fullpipe lab exec server -- fullpipe serve &             # a responder inside
  fullpipe lab exec client -- fullpipe tcp 198.18.0.2 --window 64KiB
  fullpipe lab stats                                       # forwarded, drops by cause, queue
  fullpipe lab down`

func labSpec() spec {
	return spec{
		name: "lab", usage: "up|down|exec|stats|profiles [flags]",
		summary: "emulated network paths in namespaces: lab up|down|exec|stats|profiles",
		long:    labLong, example: labExample,
		sub: []spec{
			{name: "up", usage: "[link options] [flags]", summary: "build the path and forward until Ctrl-C (or --detach)",
				long: labLong, example: labExample, new: func() command { return &labUpArgs{} }},
			{name: "down", usage: "[--name NAME]", summary: "remove a lab: its namespaces, devices, state and background process",
				long:    "Removes the lab NAME: stops its background process (lab up --detach), deletes its namespaces and devices and its state. It also cleans what a crashed lab left.",
				example: "  fullpipe lab down\n  fullpipe lab down --name tdt", new: func() command { return &labDownArgs{} }},
			{name: "exec", usage: "client|server [--name NAME] -- CMD [ARGS]", pos: argCommand, choices: []string{"client", "server"}, summary: "run a command inside the client or server namespace",
				long:    "Runs CMD inside the namespace NAME-client or NAME-server of a running lab, with its exit status. Put -- before CMD so that its flags are its own.",
				example: "  fullpipe lab exec server -- fullpipe serve &\n  fullpipe lab exec client -- fullpipe tcp 198.18.0.2 -t 5\n  fullpipe lab exec client --name tdt -- ping -c 3 198.18.0.2",
				new:     func() command { return &labExecArgs{} }},
			{name: "stats", usage: "[--name NAME] [--json]", summary: "a running lab's counters: forwarded, drops by cause, queue",
				long:    "Prints a running lab's counters per direction: packets in and forwarded, drops by cause (queue, policer, loss, ber, mtu, cell), the queue now and its maximum.",
				example: "  fullpipe lab stats\n  fullpipe lab stats --name tdt -J", new: func() command { return &labStatsArgs{} }},
			{name: "profiles", usage: "[--json]", summary: "the preset paths (lab up --profile NAME)",
				long:    "Lists the preset paths, what each teaches and its link options; lab up --profile NAME starts from one, and flags given too change it.",
				example: "  fullpipe lab profiles\n  fullpipe lab profiles --json", new: func() command { return &labProfilesArgs{} }},
		},
	}
}

// labName is the --name every lab verb takes.
type labName struct{ name string }

func (n *labName) flags(fs *pflag.FlagSet) {
	fs.Var(text(&n.name, "fp", "NAME"), "name", "lab name: namespaces NAME-client and NAME-server")
}

// labUpArgs are lab up's flags; validate turns them into cfg.
type labUpArgs struct {
	labName
	profile, framing string
	detach, json     bool
	stampInputs      bool
	seed             uint64
	link             *linkFlags
	cfg              lab.Config
}

func (a *labUpArgs) flags(fs *pflag.FlagSet) {
	a.labName.flags(fs)
	fs.Var(textValue{v: &a.profile, meta: "PROFILE", choices: lab.ProfileNames()}, "profile", "start from a preset path (see `fullpipe lab profiles`)")
	fs.Var(oneOf(&a.framing, "ethernet", "ethernet", "none"), "framing", "bytes the bottleneck counts per packet: ethernet (+38 B) or none (IP only)")
	fs.Var(seed(&a.seed, 0), "seed", "random seed for loss, BER and jitter (default: random, printed)")
	fs.BoolVar(&a.detach, "detach", false, "return once the path is up, leaving it running in the background")
	fs.BoolVarP(&a.json, "json", "J", false, "print the lab's state as JSON")
	fs.BoolVar(&a.stampInputs, "stamp-inputs", false, "stamp each packet as it enters the lab, to count how long it waited for the forwarder (lab stats: forwarder_input_waits); costs the senders a copy per packet")
	a.link = addLinkFlags(fs)
}

func (a *labUpArgs) validate(in input) error {
	a.cfg = lab.Config{Name: a.name, Seed: a.seed, Framing: lab.Framing(a.framing), Profile: a.profile, StampInputs: a.stampInputs}
	if a.profile != "" {
		p, ok := lab.Profiles[a.profile]
		if !ok {
			return usagef("unknown profile %q (see `fullpipe lab profiles`)", a.profile)
		}
		a.cfg.Up, a.cfg.Down = p.Up, p.Down
	}
	if err := a.link.apply(&a.cfg.Up, &a.cfg.Down); err != nil {
		return err
	}
	if !in.changed("seed") {
		a.cfg.Seed = rand.Uint64() >> 12
	}
	if err := a.cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	return nil
}

func (a *labUpArgs) run(e env) error {
	if a.detach && os.Getenv(childEnv) == "" {
		return labDetach(e, a.name, a.json)
	}
	return labUp(e, a.cfg, a.json)
}

type labDownArgs struct{ labName }

func (*labDownArgs) validate(input) error { return nil }
func (a *labDownArgs) run(e env) error {
	if _, err := lab.ReadState(a.name); err != nil {
		fmt.Fprintf(e.stderr, "no lab %q was running; removing anything it left\n", a.name)
	}
	return lab.Cleanup(a.name)
}

type labExecArgs struct {
	labName
	ns   string
	argv []string
}

func (a *labExecArgs) validate(in input) error {
	if len(in.args) < 2 || (in.args[0] != "client" && in.args[0] != "server") {
		return usagef("want: lab exec client|server -- CMD [ARGS]")
	}
	a.ns, a.argv = in.args[0], in.args[1:]
	return nil
}
func (a *labExecArgs) run(e env) error {
	return lab.Exec(a.name+"-"+a.ns, a.argv, envLab+"="+a.name) // a fullpipe test run there says whether the lab held its path
}

type labStatsArgs struct {
	labName
	json bool
}

func (a *labStatsArgs) flags(fs *pflag.FlagSet) {
	a.labName.flags(fs)
	fs.BoolVarP(&a.json, "json", "J", false, "print as JSON")
}
func (*labStatsArgs) validate(input) error { return nil }
func (a *labStatsArgs) run(e env) error {
	st, err := lab.ReadStats(a.name)
	if err != nil {
		return err
	}
	if a.json {
		return report.JSON(e.stdout, st)
	}
	printLabStats(e.stdout, st)
	return nil
}

type labProfilesArgs struct{ json bool }

func (a *labProfilesArgs) flags(fs *pflag.FlagSet) {
	fs.BoolVarP(&a.json, "json", "J", false, "print as JSON")
}
func (*labProfilesArgs) validate(input) error { return nil }
func (a *labProfilesArgs) run(e env) error {
	if a.json {
		return report.JSON(e.stdout, lab.Profiles)
	}
	printLabProfiles(e.stdout)
	return nil
}

const childEnv = "FULLPIPE_LAB_CHILD"

func labUp(e env, cfg lab.Config, asJSON bool) error {
	l, err := lab.Up(cfg)
	if err != nil {
		return exitError{ExitRefused, err}
	}
	defer l.Close()
	if asJSON {
		if err := report.JSON(e.stdout, l.State); err != nil {
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
				return report.JSON(e.stdout, st)
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
