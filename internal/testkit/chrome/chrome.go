// Package chrome starts a headless Chromium (Debian's chromium) for the
// web page's tests and benchmark, driven over the DevTools protocol by
// chromedp. The browser is a real second process; it is told to make no
// connection of its own (no updates, sync, metrics or safe browsing) and
// to resolve no host name, so it reaches only the addresses a test
// gives it literally (loopback, or a lab address).
package chrome

import (
	"context"
	"errors"
	"os"
	"os/exec"

	"github.com/chromedp/chromedp"
)

// Path is the browser's binary: $FULLPIPE_CHROMIUM, else chromium or
// chromium-browser on PATH; "" when there is none.
func Path() string {
	if p := os.Getenv("FULLPIPE_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// ErrNoBrowser says there is no Chromium to run.
var ErrNoBrowser = errors.New("no chromium on PATH (Debian: apt-get install chromium; or set FULLPIPE_CHROMIUM)")

// Options are a browser's: its binary (Path), the window size, and a
// wrapper command to start it under (e.g. ip netns exec NS), if any.
type Options struct {
	Exec          string
	Width, Height int
	Flags         []chromedp.ExecAllocatorOption
}

// Start starts a headless browser and returns a context that drives
// its first tab; cancel ends the browser and waits for it.
func Start(ctx context.Context, o Options) (context.Context, context.CancelFunc, error) {
	if o.Exec == "" {
		o.Exec = Path()
	}
	if o.Exec == "" {
		return nil, nil, ErrNoBrowser
	}
	if o.Width == 0 {
		o.Width, o.Height = 1400, 1000
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(o.Exec),
		chromedp.WindowSize(o.Width, o.Height),
		// No name resolves, and no address but loopback and the lab's
		// (198.18.0.0/15) is reached: the rule names them as patterns.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE 198.18.*, EXCLUDE 198.19.*"),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("ignore-certificate-errors", true), // the controller's self-signed certificate (tests pin it elsewhere)
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	opts = append(opts, o.Flags...)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	// The first run starts the browser (on the tab's own context: a
	// timeout on it would end the browser with it).
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		bcancel()
		acancel()
		return nil, nil, err
	}
	return bctx, func() { bcancel(); acancel() }, nil
}
