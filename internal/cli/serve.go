package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/fullpipe/fullpipe/internal/version"
)

// publicPreset is what --public sets, flag by flag, unless the flag is
// given too: limits for a responder on a public address, fixed and
// announced like M-Lab ndt-server's.
var publicPreset = [][2]string{
	{"max-duration", "30s"},           // a test, not a load generator
	{"max-streams", "8"},              // per direction
	{"max-sessions-per-addr", "2"},    // a sweep: an rtt session beside its tcp test
	{"max-conns-per-addr", "24"},      // one test's 2 × 8 streams + 8
	{"max-rate", "1G"},                // in total, over all sessions
	{"max-write-size", "1MiB"},        // per write call, per stream
	{"max-probe-rate", "100"},         // echo replies per second of a test
	{"allow-dscp", "0,8,10,18,26,34"}, // best effort, CS1, AF11, AF21, AF31, AF41
}

// presetHelp lists the preset for the help text, wrapped at 72 columns.
func presetHelp() string {
	var b strings.Builder
	col := 0
	for i, p := range publicPreset {
		item := fmt.Sprintf("--%s %s", p[0], p[1])
		if i < len(publicPreset)-1 {
			item += ","
		} else {
			item += "."
		}
		if col+1+len(item) > 72 {
			b.WriteString("\n")
			col = 0
		} else if i > 0 {
			b.WriteString(" ")
			col++
		}
		b.WriteString(item)
		col += len(item)
	}
	return b.String()
}

func init() {
	register(&command{
		name:    "serve",
		summary: "run the responder that tests connect to",
		usage:   "[--listen HOST:PORT] [--public] [flags]",
		long: `Runs the fullpipe responder. It listens on one port for TCP (control and
data connections) and UDP (RTT probes and UDP streams), default 6349.

It serves many clients at once: each test is its own session, with its own
streams, until a limit below refuses new ones with a message to the client
(a busy answer says when to retry). With --secret-file, a client must prove
it knows the secret (HMAC over a random challenge; the secret never crosses
the network) before any data flows. Logs go to stderr, one line per session
event. Stop with Ctrl-C: running sessions are ended and their clients told.

Limits that hold on a public address: connections are capped in total
(default: the open-file limit less 64) and per address (an IPv4 address or
an IPv6 /64); a connection must send its preamble within 2 s; frames before
a session exists are at most 4 KiB; every rate a request names is bounded
by --max-rate (1 Tbit/s without it), summed without overflow; windows stay
within net.core.wmem_max unless --force-sndbuf; congestion control and
DSCP come from allowlists; UDP echo replies go only to the session's own
client address and port, are never larger than the probe (but for
path-MTU probes of an mtu session, at most 9000 bytes) and are counted
against a budget the request announces; a test ends at most 6 s after its
duration, whether its client reads or not.

--public sets, unless given too:
` + presetHelp(),
		flags: serveFlags,
	})
	register(&command{
		name:    "version",
		summary: "print version, Go and kernel",
		usage:   "",
		long:    "Prints fullpipe's version, the Go toolchain it was built with and this host's kernel.",
		flags: func(fs *pflag.FlagSet) func(env, []string) error {
			return func(e env, args []string) error {
				fmt.Fprintf(e.stdout, "%s, kernel %s, default congestion control %s\n", version.Software(), version.Kernel(), defaultCC())
				return nil
			}
		},
	})
}
