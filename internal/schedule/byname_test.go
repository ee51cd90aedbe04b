package schedule

import (
	"encoding/json"
	"fmt"
	"time"
)

// byName is the costs by their kinds' schedule names, as the table of
// kinds (package kinds) holds them; the tests here ask them by name, as
// the controller does through the table. TestKinds checks it has every
// kind.
var byName = map[string]Costing{"tcp": TCP, "udp": UDP, "rtt": RTT, "mtu": MTU, "trains": Trains, "rfc6349": RFC6349,
	"sweep-window": WindowSweep, "sweep-msglen": MsgLenSweep, "ping": Ping, "stamp": STAMP, "rfc2544": RFC2544, "y1564": Y1564}

func named(name string) (Costing, error) {
	k, ok := byName[name]
	if !ok {
		return Costing{}, fmt.Errorf("unknown test kind %q", name)
	}
	return k, nil
}

// wrapped names the kind in err, as kinds.Length does.
func wrapped(name string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func Length(name string, cfg json.RawMessage) (time.Duration, error) {
	k, err := named(name)
	if err != nil {
		return 0, err
	}
	d, err := k.Length(cfg)
	return d, wrapped(name, err)
}

func SlotFor(name string, cfg json.RawMessage, rtt time.Duration) (time.Duration, error) {
	k, err := named(name)
	if err != nil {
		return 0, err
	}
	d, err := k.SlotFor(cfg, rtt)
	return d, wrapped(name, err)
}

func Exclusive(name string) bool {
	k, err := named(name)
	return err != nil || k.Exclusive()
}

func ExclusiveFor(name string, cfg json.RawMessage) bool {
	k, err := named(name)
	return err != nil || k.ExclusiveFor(cfg)
}

func SharedRate(name string, cfg json.RawMessage) (float64, error) {
	k, err := named(name)
	if err != nil {
		return 0, err
	}
	r, err := k.SharedRate(cfg)
	return r, wrapped(name, err)
}

func costFor(name string, cfg json.RawMessage, rtt time.Duration) (cost, error) {
	k, err := named(name)
	if err != nil {
		return cost{}, err
	}
	c, err := k.costFor(cfg, rtt)
	return c, wrapped(name, err)
}
