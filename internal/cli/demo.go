package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/serve"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/version"
)

func init() {
	register(&command{
		name:    "demo",
		summary: "run a responder and a test on loopback, on this machine alone",
		usage:   "[flags]",
		long: `Starts a responder on 127.0.0.1 inside this process, then measures the
path to it: UDP round-trip time, then TCP goodput with latency under
load. Nothing leaves the machine. It shows what the tests report and
checks that this host can run them; loopback has no real bottleneck, so
the figures say what this host's CPU and kernel can move, not what a
network can.`,
		flags: func(fs *pflag.FlagSet) func(env, []string) error {
			var asJSON bool
			var streams int
			var dur time.Duration
			fs.IntVarP(&streams, "streams", "P", 1, "TCP streams")
			durVar(fs, &dur, "duration", "t", 5*time.Second, "TCP test duration")
			fs.BoolVar(&asJSON, "json", false, "print the results as one JSON document")
			return func(e env, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected argument %q", args[0])
				}
				if streams < 1 || streams > maxStreams || dur <= 0 {
					return usagef("want 1..%d streams and a positive duration", maxStreams)
				}
				srv, err := serve.Listen(serve.Config{Listen: "127.0.0.1:0", Software: version.Software(), Kernel: version.Kernel(),
					Log: slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
				if err != nil {
					return err
				}
				sctx, stop := context.WithCancel(context.Background())
				served := make(chan error, 1)
				go func() { served <- srv.Serve(sctx) }()
				defer func() { stop(); <-served }()
				t := tester.Target{Addr: srv.Addr().String()}
				if !asJSON {
					fmt.Fprintf(e.stdout, "fullpipe demo: responder on %s (in this process)\n\n1. UDP round-trip time, 20 probes 10ms apart\n", t.Addr)
				}
				rtt, err := tester.RunRTT(e.ctx, t, tester.RTTConfig{Count: 20, Interval: 10 * time.Millisecond, Size: 64}, nil)
				if rtt != nil {
					rtt.Meta.Command = e.args
					if !asJSON {
						printRTTSummary(e.stdout, rtt)
					}
				}
				if err != nil {
					return finish(e, asJSON, rtt, rtt != nil, err, func(io.Writer) {})
				}
				cfg := tester.TCPConfig{Streams: streams, Duration: dur, Interval: time.Second, Latency: true}
				var progress func(result.TCPInterval)
				if !asJSON {
					fmt.Fprintf(e.stdout, "\n2. TCP goodput, %d stream(s) for %v, RTT probes during the load\n", streams, dur)
					progress = (&tcpPrinter{w: e.stdout, cfg: cfg}).interval
				}
				tcp, err := tester.RunTCP(e.ctx, t, cfg, progress)
				if tcp != nil {
					tcp.Meta.Command = e.args
				}
				if asJSON {
					enc := json.NewEncoder(e.stdout)
					enc.SetIndent("", "  ")
					if jerr := enc.Encode(struct {
						RTT *result.RTT `json:"rtt"`
						TCP *result.TCP `json:"tcp"`
					}{rtt, tcp}); jerr != nil {
						return jerr
					}
					return finish(e, false, nil, false, err, nil)
				}
				return finish(e, false, tcp, tcp != nil, err, func(w io.Writer) { printTCPSummary(w, tcp) })
			}
		},
	})
}
