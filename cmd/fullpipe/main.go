// Command fullpipe tests networks at the TCP layer: a responder (serve)
// and the tests that run against it (tcp, udp, rtt). See `fullpipe help`.
package main

import (
	"os"

	"github.com/fullpipe/fullpipe/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr)) }
