package result

import (
	"encoding/json"
	"fmt"
)

// A document of an older schema is decoded into today's types (keys
// that were renamed or changed unit are then missing), and its upgrade
// steps fill in what its schema kept elsewhere, so today's renderers and
// figures read it as if emitted today; docs/json.md lists the changes of
// each version. A step reads the old keys into small types of its own
// (json.Unmarshal skips the rest without allocating), never into generic
// maps: a document from a peer was bounded for its decoding into
// today's types (DecodeBounded), and an upgrade must allocate no more.

// upgrades[v] fills d, decoded from b (a document of schema v or older)
// into today's types, with what schema v kept under keys or in units
// that schema v+1 changed.
var upgrades = map[int]func(b []byte, d Doc) error{1: upgrade1}

// upgrade runs d's steps from schema from to today's and marks it
// today's, upgraded from from.
func upgrade(b []byte, d Doc, from int) error {
	for v := from; v < Schema; v++ {
		step, ok := upgrades[v]
		if !ok {
			return fmt.Errorf("no upgrade from schema %d", v)
		}
		if err := step(b, d); err != nil {
			return fmt.Errorf("upgrade from schema %d: %w", v, err)
		}
	}
	h := d.Head()
	h.Schema, h.UpgradedFrom = Schema, from
	return nil
}

// upgrade1 takes schema 1 to 2, where every delay distribution took the
// shape of stats.Delays (count, min_us, mean_us, p50_us, p90_us, p99_us,
// max_us, stddev_us). In schema 1 an RTTStats (tcp's latency_idle and
// latency_loaded, rtt's and ping's summary) had median_us, no count and
// no p90_us (but ping's); a udp stream's latency (also RFC 2544's
// latency trials and their summary) had no count and no stddev_us;
// Y.1564's delay was in ns (min_ns, mean_ns, p99_ns, max_ns) with no
// count, p50, p90 or stddev; STAMP's delays lacked only stddev_us. rtt's
// summary.interval_ms, the config's interval_ns in ms, is gone (and
// ignored). Figures schema 1 did not record read 0.
func upgrade1(b []byte, d Doc) error {
	switch d := d.(type) {
	case *TCP:
		var v1 struct {
			Summary struct {
				Idle   *rttStats1 `json:"latency_idle"`
				Loaded *rttStats1 `json:"latency_loaded"`
			} `json:"summary"`
		}
		if err := json.Unmarshal(b, &v1); err != nil {
			return err
		}
		v1.Summary.Idle.into(d.Summary.LatencyIdle)
		v1.Summary.Loaded.into(d.Summary.LatencyLoaded)
	case *RTT:
		var v1 struct {
			Summary *rttStats1 `json:"summary"`
		}
		if err := json.Unmarshal(b, &v1); err != nil {
			return err
		}
		v1.Summary.into(&d.Summary.RTTStats)
	case *Ping:
		var v1 struct {
			Summary *rttStats1 `json:"summary"`
		}
		if err := json.Unmarshal(b, &v1); err != nil {
			return err
		}
		if d.Summary != nil {
			v1.Summary.into(&d.Summary.RTTStats)
		}
	case *UDP:
		d.Summary.Latency.count1()
	case *RFC2544:
		for _, dir := range d.Directions {
			for _, s := range dir.sizes() {
				if l := s.Latency; l != nil {
					for _, t := range l.Trials {
						t.count1()
					}
					l.Summary.count1()
				}
			}
		}
	case *Y1564:
		return y1564Upgrade1(b, d)
	}
	return nil
}

// rttStats1 is what schema 1's RTTStats kept that schema 2 names
// otherwise: its median, now p50_us.
type rttStats1 struct {
	MedianUs float64 `json:"median_us"`
}

// into sets s's p50 to o's median and its count to its replies; nothing
// when either is absent.
func (o *rttStats1) into(s *RTTStats) {
	if o == nil || s == nil {
		return
	}
	s.P50Us, s.Count = o.MedianUs, s.Received
}

// count1 sets a schema-1 latency's count to its replies.
func (l *UDPLatency) count1() {
	if l != nil {
		l.Count = int(l.Replies)
	}
}

// sizes are a direction's sizes; none for a direction null in JSON.
func (d *RFC2544Direction) sizes() []*RFC2544Size {
	if d == nil {
		return nil
	}
	var out []*RFC2544Size
	for _, s := range d.Sizes {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// y1564Step1 is what a schema-1 Y.1564 step kept that schema 2 keeps
// otherwise: its probes' round trips in ns.
type y1564Step1 struct {
	Figures struct {
		Delay *struct {
			MinNs  float64 `json:"min_ns"`
			MeanNs float64 `json:"mean_ns"`
			P99Ns  float64 `json:"p99_ns"`
			MaxNs  float64 `json:"max_ns"`
		} `json:"delay"`
	} `json:"figures"`
}

// into sets st's delay (min, mean, p99, max) in µs from o's ns, and its
// count to its replies.
func (o *y1564Step1) into(st *Y1564Step) {
	if o == nil || st == nil || o.Figures.Delay == nil || st.Figures.Delay == nil {
		return
	}
	v1, d := o.Figures.Delay, st.Figures.Delay
	d.MinUs, d.MeanUs, d.P99Us, d.MaxUs = v1.MinNs/1e3, v1.MeanNs/1e3, v1.P99Ns/1e3, v1.MaxNs/1e3
	d.Count = int(d.Replies)
}

// y1564Upgrade1 reads each step's schema-1 delay beside the step it
// belongs to (the same services and steps, in the same order).
func y1564Upgrade1(b []byte, d *Y1564) error {
	var v1 struct {
		Services []struct {
			Steps       []y1564Step1 `json:"config_steps"`
			Performance *y1564Step1  `json:"performance"`
		} `json:"services"`
	}
	if err := json.Unmarshal(b, &v1); err != nil {
		return err
	}
	if len(v1.Services) != len(d.Services) {
		return fmt.Errorf("%d services, %d decoded", len(v1.Services), len(d.Services))
	}
	for i, s := range v1.Services {
		ds := &d.Services[i]
		if len(s.Steps) != len(ds.Steps) {
			return fmt.Errorf("service %d: %d steps, %d decoded", i, len(s.Steps), len(ds.Steps))
		}
		for j := range s.Steps {
			s.Steps[j].into(&ds.Steps[j])
		}
		s.Performance.into(ds.Performance)
	}
	return nil
}
