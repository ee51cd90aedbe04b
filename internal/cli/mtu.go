package cli

import (
	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/tester"
)

func mtuSpec() spec {
	return spec{
		name: "mtu", usage: hostUsage + " [flags]", pos: argTarget,
		summary: "path MTU in each direction by probing (works without ICMP)",
		long: `Finds the largest IP packet that crosses the path in each direction, by
packetization-layer probing (RFC 4821 / RFC 8899 style): DF-set UDP probes
echoed by the responder, a binary search between --min and the local
interface MTU, each size tried up to 3 times. Up probes are large with a
small reply; down probes are small and ask for a large reply. It does not
depend on ICMP "fragmentation needed", which firewalls often drop (a PMTUD
black hole); it reports whether such ICMP reached this host.`,
		example: `  fullpipe mtu 198.18.0.2                 both directions, 1200 B to the local MTU
  fullpipe mtu 198.18.0.2 --min 1280 --max 9000 --tries 5
                                          a jumbo-frame path, 5 tries per size
  fullpipe mtu 198.18.0.2 --report mtu.html
                                          also a page with the result as a table`,
		new: func() command { return &mtuArgs{} },
	}
}

// mtuArgs are mtu's flags; validate checks cfg.
type mtuArgs struct {
	clientArgs
	cfg result.PMTUConfig
}

func (a *mtuArgs) flags(fs *pflag.FlagSet) {
	fs.Var(num(&a.cfg.MinBytes, 0, "bytes"), "min", "smallest IP packet size searched (default 1200, IPv6 1280)")
	fs.Var(num(&a.cfg.MaxBytes, 0, "bytes"), "max", "largest IP packet size searched (default: the local MTU)")
	fs.Var(count(&a.cfg.Tries, 3), "tries", "probes per size before it counts as lost")
	a.clientArgs.flags(fs)
}

func (a *mtuArgs) validate(in input) error {
	if err := a.resolve(in); err != nil {
		return err
	}
	return refuseZeros(in, zeroed{"tries", a.cfg.Tries == 0, "want at least 1 probe per size"}) // --min and --max 0 are the defaults
}

func (a *mtuArgs) run(e env) error {
	progressf(e, a.json, "probing the path MTU to %s ...", tester.HostPort(a.target.Addr))
	res, err := tester.RunPMTU(e.ctx, a.target, a.cfg)
	if res != nil {
		withCommand(&res.Meta, e)
	}
	return finish(e, &a.clientArgs, res, res != nil, err)
}
