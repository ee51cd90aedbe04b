package tester

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/stamp"
	"github.com/fullpipe/fullpipe/internal/version"
)

// STAMPCost is a STAMP session's own time (RunSTAMP): its packets, then
// the wait for the last replies (STAMPConfig.Span). Counted as one
// session (its sockets and the round trips at its ends), sending its
// packets' rate.
func STAMPCost(cfg result.STAMPConfig) schedule.Cost {
	cfg = cfg.WithDefaults()
	return schedule.Cost{Run: cfg.Span(), Sessions: 1, RateBps: schedule.ProbeRate(cfg.Size, cfg.Interval)}
}

// RunSTAMP runs a STAMP session (RFC 8762) from this host to the
// reflector on t's host at cfg.Port: no fullpipe responder is involved,
// so t's secret and TLS do not apply. It returns a partial document,
// with an error wrapping result.ErrPartial, when ctx ends first.
func RunSTAMP(ctx context.Context, t Target, cfg result.STAMPConfig) (*result.STAMP, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sc, err := senderConfig(t, cfg)
	if err != nil {
		return nil, err
	}
	s, err := stamp.NewSender(sc)
	if err != nil {
		return nil, err
	}
	doc := &result.STAMP{Config: cfg}
	doc.Meta = result.Meta{Schema: result.Schema, Tool: "fullpipe", Version: version.Release, Test: "stamp",
		Started: time.Now(), Target: sc.Target, Client: result.Host{Software: version.Software(), Kernel: version.Kernel()}}
	res, err := s.Run(ctx)
	if err != nil && res.Sent == 0 {
		return nil, err
	}
	doc.Summary = result.NewSTAMPSummary(res, cfg)
	if err != nil {
		doc.Summary.Partial, doc.Summary.PartialReason = true, err.Error()
		return doc, fmt.Errorf("%w: %w", result.ErrPartial, err)
	}
	return doc, nil
}

// STAMPHost is the reflector's host:port: t's host (its port, the
// responder's, dropped) at port.
func STAMPHost(t Target, port int) string {
	return net.JoinHostPort(PingHost(t.Addr), strconv.Itoa(port))
}

// senderConfig is the stamp.Sender's config for cfg towards t.
func senderConfig(t Target, cfg result.STAMPConfig) (stamp.SenderConfig, error) {
	sc := stamp.SenderConfig{Target: STAMPHost(t, cfg.Port), Count: cfg.Count, Interval: cfg.Interval,
		Size: cfg.Size, Wait: cfg.Wait, Stateful: cfg.Stateful, Synced: cfg.ClockSynced}
	if cfg.Timestamps == "ptp" {
		sc.Format = stamp.PTP
	}
	if cfg.KeyFile != "" {
		key, err := ReadSTAMPKey(cfg.KeyFile)
		if err != nil {
			return sc, err
		}
		sc.Key = key
	}
	return sc, nil
}

// MaxSTAMPKeyBytes is the largest STAMP key file read: HMAC-SHA-256
// hashes a key longer than its 64-octet block anyway, and a cap keeps a
// path to something endless (/dev/zero) from eating the memory.
const MaxSTAMPKeyBytes = 1024

// ReadSTAMPKey reads an HMAC key file: its bytes, a trailing newline
// dropped. STAMP has no key exchange (RFC 8762 §4.4): both ends are
// given the same file. Only a regular file of at most MaxSTAMPKeyBytes
// is read (not a device, a FIFO or a directory).
func ReadSTAMPKey(path string) ([]byte, error) {
	fi, err := os.Stat(path) // before opening: opening a FIFO would wait for a writer
	if err != nil {
		return nil, fmt.Errorf("STAMP key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("STAMP key file %s: not a regular file (%v): make one with head -c 32 /dev/urandom > stamp.key", path, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("STAMP key file: %w", err)
	}
	defer f.Close()
	if ofi, err := f.Stat(); err != nil || !os.SameFile(fi, ofi) {
		return nil, fmt.Errorf("STAMP key file %s: replaced while opened", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSTAMPKeyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("STAMP key file: %w", err)
	}
	if len(b) > MaxSTAMPKeyBytes {
		return nil, fmt.Errorf("STAMP key file %s: more than %d bytes: a key is 16 to 64", path, MaxSTAMPKeyBytes)
	}
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	if len(b) < 16 {
		return nil, errors.New("STAMP key file: fewer than 16 bytes: make one with head -c 32 /dev/urandom > stamp.key")
	}
	return b, nil
}

// ResolveSTAMPKey turns a scheduled config's key name into the file in
// dir that holds it (cfg.KeyFile), as an agent does before the run: a
// key_file in a scheduled config, a name that is a path, or a key
// without a dir is refused.
func ResolveSTAMPKey(cfg result.STAMPConfig, dir string) (result.STAMPConfig, error) {
	switch {
	case cfg.KeyFile != "":
		return cfg, errors.New("stamp config: key_file is refused in a scheduled test: name a key with key, a file in the agent's --stamp-key-dir")
	case cfg.Key == "":
		return cfg, nil
	case dir == "":
		return cfg, fmt.Errorf("stamp config: key %q: this agent has no key directory: start it with --stamp-key-dir", cfg.Key)
	}
	if err := result.CheckSTAMPKeyName(cfg.Key); err != nil {
		return cfg, fmt.Errorf("stamp config: key %q: %w", cfg.Key, err)
	}
	cfg.KeyFile = filepath.Join(dir, cfg.Key)
	if _, err := ReadSTAMPKey(cfg.KeyFile); err != nil {
		return cfg, fmt.Errorf("stamp config: key %q: %w", cfg.Key, err)
	}
	return cfg, nil
}

// STAMP runs RunSTAMP towards the host of r's target.
func (r Remote) STAMP(ctx context.Context, cfg result.STAMPConfig) (*result.STAMP, error) {
	return RunSTAMP(ctx, r.T, cfg)
}
