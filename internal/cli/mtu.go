package cli

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
	"github.com/fullpipe/fullpipe/internal/units"
)

func init() {
	register(&command{
		name:    "mtu",
		summary: "path MTU in each direction by probing (works without ICMP)",
		usage:   hostUsage + " [flags]",
		long: `Finds the largest IP packet that crosses the path in each direction, by
packetization-layer probing (RFC 4821 / RFC 8899 style): DF-set UDP probes
echoed by the responder, a binary search between --min and the local
interface MTU, each size tried up to 3 times. Up probes are large with a
small reply; down probes are small and ask for a large reply. It does not
depend on ICMP "fragmentation needed", which firewalls often drop (a PMTUD
black hole); it reports whether such ICMP reached this host.`,
		flags: func(fs *pflag.FlagSet) func(env, []string) error {
			var cf clientFlags
			var cfg result.PMTUConfig
			fs.IntVar(&cfg.MinBytes, "min", 0, "smallest IP packet size searched, bytes (default 1200, IPv6 1280)")
			fs.IntVar(&cfg.MaxBytes, "max", 0, "largest IP packet size searched, bytes (default: the local MTU)")
			fs.IntVar(&cfg.Tries, "tries", 3, "probes per size before it counts as lost")
			cf.add(fs)
			return func(e env, args []string) error {
				t, err := cf.target(args)
				if err != nil {
					return err
				}
				if cfg.MinBytes != 0 && (cfg.MinBytes < 68 || cfg.MinBytes > 65535) || cfg.MaxBytes != 0 && cfg.MaxBytes < cfg.MinBytes || cfg.Tries < 1 {
					return usagef("want 68 <= --min <= --max and --tries >= 1")
				}
				progressf(e, cf.json, "probing the path MTU to %s ...", tester.HostPort(t.Addr))
				res, err := tester.RunPMTU(e.ctx, t, cfg)
				return finish(e, cf.json, res, res != nil, err, func(w io.Writer) {
					fmt.Fprintf(w, "path MTU up (to the responder): %s\npath MTU down (to this host):   %s\nlocal interface MTU %d B; ICMP fragmentation-needed seen: %v; %d probes, timeout %s each\n",
						mtuText(res.UpBytes), mtuText(res.DownBytes), res.LocalBytes, res.ICMPSeen, res.Probes, units.FormatDuration(res.Timeout))
				})
			}
		},
	})
}

func mtuText(n int) string {
	if n == 0 {
		return "below the search floor (nothing passed)"
	}
	return fmt.Sprintf("%d B (TCP MSS %d B on IPv4 without options)", n, n-40)
}
