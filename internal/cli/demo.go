package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/lab"
	"github.com/fullpipe/fullpipe/internal/report"
	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/version"
)

const demoProfile = "window"

func demoSpec() spec {
	return spec{
		name: "demo", usage: "[flags]",
		summary: "a lab path with a responder inside, and tests across it, on this machine alone",
		long: `Builds the lab path of the design's scenario 1 (100 Mbit/s, 20 ms RTT, a
375 kB queue; ` + "`fullpipe lab profiles`" + `), starts a responder inside it, and
measures across it: UDP round-trip time, TCP goodput with an unbounded
window, and TCP goodput with a 64 KiB window, the limit of a host without
window scaling (RFC 6349's first example: about 26 Mbit/s instead of 94).
Everything stays inside two network namespaces on this machine and is
removed at the end. Needs root; without root, or with --loopback, it runs
the responder and the tests on 127.0.0.1 instead.`,
		example: `  sudo fullpipe demo                 the lab path, about 15 s
  fullpipe demo --loopback -t 2      on 127.0.0.1, 2 s per TCP test
  sudo fullpipe demo -J              every test's JSON document in one`,
		new: func() command { return &demoArgs{} },
	}
}

// demoArgs are demo's flags.
type demoArgs struct {
	json, loopback bool
	dur            time.Duration
}

func (a *demoArgs) flags(fs *pflag.FlagSet) {
	fs.VarP(dur(&a.dur, 5*time.Second), "duration", "t", "duration of each TCP test")
	fs.BoolVar(&a.loopback, "loopback", false, "skip the lab: responder and tests on 127.0.0.1")
	fs.BoolVarP(&a.json, "json", "J", false, "print the results as one JSON document")
}

func (a *demoArgs) validate(input) error {
	if a.dur <= 0 {
		return usagef("--duration must be positive")
	}
	return nil
}

func (a *demoArgs) run(e env) error {
	d := demo{e: e, dur: a.dur, asJSON: a.json}
	if !a.loopback && os.Geteuid() != 0 {
		fmt.Fprintln(e.stderr, "demo: not root, so no lab (network namespaces need root); running on loopback instead")
		a.loopback = true
	}
	if a.loopback {
		return d.onLoopback()
	}
	return d.inLab()
}

type demo struct {
	e      env
	dur    time.Duration
	asJSON bool
	prefix []string // how to run a client command (inside the lab)
	target string
	docs   map[string]json.RawMessage
	failed error
}

// labWithResponder builds the lab path of profile name as lab NAME, runs
// its forwarder and starts an in-process responder inside its server
// namespace on port 6349. stop ends the responder, then the lab.
func (d *demo) labWithResponder(name, profile string) (l *lab.Lab, cfg lab.Config, stop func(), err error) {
	p := lab.Profiles[profile]
	cfg = lab.Config{Name: name, Seed: 1, Framing: lab.FramingEthernet, Up: p.Up, Down: p.Down, Profile: profile}
	l, err = lab.Up(cfg)
	if err != nil {
		return nil, cfg, nil, exitError{ExitRefused, err}
	}
	lctx, stopLab := context.WithCancel(context.Background())
	labDone := make(chan error, 1)
	go func() { labDone <- l.Run(lctx) }()
	closeLab := func() { stopLab(); <-labDone; l.Close() }
	_, stopSrv, err := d.responder(l.Server.Addr.String()+":6349", l.InServer)
	if err != nil {
		closeLab()
		return nil, cfg, nil, err
	}
	return l, cfg, func() { stopSrv(); closeLab() }, nil
}

func (d *demo) inLab() error {
	p := lab.Profiles[demoProfile]
	l, cfg, stop, err := d.labWithResponder("fpdemo", demoProfile)
	if err != nil {
		return err
	}
	defer stop()
	listen := l.Server.Addr.String() + ":6349"

	self, err := os.Executable()
	if err != nil {
		return err
	}
	d.prefix = []string{self, "lab", "exec", "client", "--name", cfg.Name, "--", self}
	d.target = l.Server.Addr.String()
	if !d.asJSON {
		fmt.Fprintf(d.e.stdout, "fullpipe demo: lab %q (%s)\n  path: %s\n  client %s in netns %s; responder %s in netns %s\n",
			cfg.Name, p.Teaches, describe(p.Up), l.Client.Addr, l.Client.NetNS, listen, l.Server.NetNS)
	}
	d.docs = map[string]json.RawMessage{}
	st, _ := json.Marshal(l.State)
	d.docs["lab"] = st
	d.steps()
	return d.finish()
}

// responder starts an in-process responder on listen; in, when not nil,
// opens its sockets inside a namespace. stop ends it and waits.
func (d *demo) responder(listen string, in func(func() error) error) (srv *serve.Server, stop func(), err error) {
	open := func() error {
		var err error
		srv, err = serve.Listen(serve.Config{Listen: listen, Software: version.Software(), Kernel: version.Kernel(),
			AllowCC: []string{"available"}, // our own responder: the steps' congestion controls (cubic) as loaded
			Log:     slog.New(slog.NewTextHandler(d.e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		return err
	}
	if in != nil {
		err = in(open)
	} else {
		err = open()
	}
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }() // ends when ctx is cancelled
	return srv, func() { cancel(); <-served }, nil
}

func (d *demo) onLoopback() error {
	srv, stop, err := d.responder("127.0.0.1:0", nil)
	if err != nil {
		return err
	}
	defer stop()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	d.prefix = []string{self}
	d.target = srv.Addr().String()
	d.docs = map[string]json.RawMessage{}
	if !d.asJSON {
		fmt.Fprintf(d.e.stdout, "fullpipe demo on loopback: responder on %s (in this process). Loopback has no bottleneck: the figures show what this host can move.\n", d.target)
	}
	d.steps()
	return d.finish()
}

// steps runs the tests one after another, each a child process (inside
// the client namespace when in the lab), stopping at the first failure.
func (d *demo) steps() {
	secs := d.dur.String()
	for _, s := range []struct {
		key, title string
		args       []string
	}{
		{"rtt", "1. UDP round-trip time: 20 probes, 20 ms apart", []string{"rtt", d.target, "-n", "20", "-i", "20ms"}},
		{"tcp", "2. TCP goodput, one stream, window unbounded, " + secs, []string{"tcp", d.target, "-t", secs}},
		{"tcp_window_64KiB", "3. TCP goodput, one stream, window 64 KiB (65,536 B), " + secs, []string{"tcp", d.target, "-t", secs, "--window", "64KiB"}},
	} {
		if d.failed != nil || d.e.ctx.Err() != nil {
			return
		}
		if !d.asJSON {
			fmt.Fprintf(d.e.stdout, "\n%s\n", s.title)
		}
		d.run(s.key, s.args)
	}
}

func (d *demo) run(key string, args []string) {
	argv := append(append([]string{}, d.prefix...), args...)
	if d.asJSON {
		argv = append(argv, "--json")
	}
	cmd := exec.CommandContext(d.e.ctx, argv[0], argv[1:]...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) } // it prints its partial result
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = d.e.stdout, d.e.stderr
	if d.asJSON {
		cmd.Stdout = &buf
		cmd.Stderr = io.Discard
	}
	if err := cmd.Run(); err != nil {
		d.failed = fmt.Errorf("%s: %w", key, err)
	}
	if d.asJSON && buf.Len() > 0 {
		d.docs[key] = json.RawMessage(bytes.TrimSpace(buf.Bytes()))
	}
}

func (d *demo) finish() error {
	if d.asJSON {
		if err := report.JSON(d.e.stdout, d.docs); err != nil {
			return err
		}
	}
	if d.failed == nil && d.e.ctx.Err() != nil {
		d.failed = d.e.ctx.Err()
	}
	if d.failed != nil {
		return exitError{ExitFailed, d.failed}
	}
	return nil
}
