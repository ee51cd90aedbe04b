package method

import (
	"context"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc6349"
	"github.com/fullpipe/fullpipe/internal/train"
	"github.com/fullpipe/fullpipe/internal/units"
	"github.com/fullpipe/fullpipe/internal/version"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// trainNoise is the timing uncertainty of a train's one-way delays and
// spans: the receive stamps are the kernel's (µs), the send stamps the
// sender's reads of its clock between writes, which a busy 2-core host
// delays by tens of µs.
const trainNoise = 50 * time.Microsecond

// trains probes dir with back-to-back UDP trains of doubling length
// until they decide (train.Enough) or reach train.Longest for the path,
// then reads them (train.Classify). When the first loss came within 8
// full-size packets (a bucket or queue of a few kB), it sends the series
// again with packets an eighth of what passed. A train a host's own
// socket dropped datagrams of is not read, and a warning says so.
func (r *runner) trains(dir vocab.Direction) (*train.Verdict, []result.TrainRow, error) {
	// A step of its own within the shaping step, for whoever times the
	// steps: a lab judges its forwarder over the trains alone, whose
	// spacing needs it far more punctual than the TCP test after them.
	r.p.emit(Event{Kind: Started, Step: StepTrains, Direction: dir, Text: "5a. packet trains, " + string(dir)})
	defer r.p.emit(Event{Kind: Finished, Step: StepTrains, Direction: dir})
	overhead := frame.IPv4UDP + r.link.Overhead // IPv4 and UDP headers, link framing
	size := r.mtu[dir] - frame.IPv4UDP
	rs, rows, err := r.trainSeries(dir, size, overhead)
	if err != nil {
		return nil, rows, err
	}
	if small := smallestLossyHead(rs); small > 0 && small < 8 && size > train.MinPacket {
		size = max(train.MinPacket, train.PacketSize(float64(small*(size+overhead)))-overhead)
		var more []result.TrainRow
		rs, more, err = r.trainSeries(dir, size, overhead)
		rows = append(rows, more...)
		if err != nil {
			return nil, rows, err
		}
	}
	v := train.Classify(rs, trainNoise)
	return &v, rows, nil
}

// trainSeries sends the trains of one packet size, doubling from 16
// packets.
func (r *runner) trainSeries(dir vocab.Direction, size, overhead int) ([]train.Reading, []result.TrainRow, error) {
	bb := r.bb[dir]
	bdp := rfc6349.BDPBytes(bb, r.baseline)
	per := size + overhead
	// Paced at 4 × the larger of BB and the CIR: fast enough that a queue
	// fills (by 3/4 of what arrives) and a bucket empties, slow enough not
	// to queue first in this host's own device queue.
	sender := 4 * max(bb, float64(r.cfg.CIRBps))
	var rs []train.Reading
	var rows []result.TrainRow
	for n := 16; ; n *= 2 {
		longest := max(2, train.Longest(bb, bdp, sender, per)/per)
		n = min(n, longest)
		// Drain: the path's delay twice, a full queue of the train's
		// bytes at the bottleneck, and 250 ms for a policer's bucket to
		// fill again before the next train.
		drain := 2*r.baseline + time.Duration(float64(n*per)*8/bb*1e9) + 250*time.Millisecond
		cfg := result.TrainConfig{Packets: n, Size: size, Overhead: overhead, Reverse: dir == vocab.Down, Drain: drain, RateBps: int64(sender * float64(size) / float64(per))}
		res, tries, err := r.sendTrain(dir, cfg)
		rows = append(rows, tries...)
		if err != nil {
			return rs, rows, err
		}
		switch sent := res.Reading.SendBps; {
		case res.LocalDrops > 0:
			r.warn(fmt.Sprintf("%s: a train of %d × %d B lost %d datagrams in a host's own socket buffers, not on the path; it is not read (host limit: raise net.core.rmem_max / wmem_max)", dir, n, size, res.LocalDrops))
		case sent > 0 && sent < sender/2:
			// Sent at under twice the bottleneck's rate, a train barely
			// fills a queue or empties a bucket: the spacing the
			// receiver sees is the sender's.
			r.warn(fmt.Sprintf("%s: a train of %d × %d B left the %s at %.1f Mbit/s, under half its pace of %.1f Mbit/s: its host could not send it back to back, so it is not read (host limit)", dir, n, size, dir.Sender(), sent/1e6, sender/1e6))
		case train.HeldBurst(res.Reading):
			// Read still: its head is the link's, its loss and tail are
			// set aside by Classify.
			r.warn(fmt.Sprintf("%s: in %d sends of a train of %d × %d B the %s was held longer than its pace allows (last %s) and packets were lost after: that train's loss and tail are the host's, not read (host limit: repeat with the host idle)", dir, len(tries), n, size, dir.Sender(), units.FormatDuration(res.Reading.SenderHeld)))
			rs = append(rs, res.Reading)
		default:
			rs = append(rs, res.Reading)
		}
		if train.Enough(rs, trainNoise) || n >= longest {
			return rs, rows, nil
		}
	}
}

// trainTries bounds the sends of one train whose sender was held. A
// send costs the train and its drain (under 0.6 s at the longest), and
// beside a busy core most sends of a long fast train are held: CI run
// 40's policed path (1024 packets at 400 Mbit/s) had a train held in
// each of its 3 sends in 4 runs of 5. Each further send is a fresh
// chance of an unheld one.
const trainTries = 6

// sendTrain sends one train, and again while it lost packets after its
// sender was held longer than its pace allows (train.HeldBurst), at most
// trainTries times in all: what such a train's host did is not the
// path's to read, and on a shared host the next send may keep its pace.
// It returns the last send, and a row for each.
func (r *runner) sendTrain(dir vocab.Direction, cfg result.TrainConfig) (*result.Train, []result.TrainRow, error) {
	var rows []result.TrainRow
	for try := 1; ; try++ {
		res, err := r.net.Train(r.ctx, cfg)
		if err != nil {
			return nil, rows, fmt.Errorf("%s: train of %d × %d B: %w", dir, cfg.Packets, cfg.Size, err)
		}
		rows = append(rows, result.TrainRow{Packets: cfg.Packets, SizeBytes: cfg.Size, Reading: res.Reading, LocalDrops: res.LocalDrops})
		if r.res.Server.Software == "" {
			r.res.Server = res.Server // the trains document's; an RFC 6349 run has it from step 2
		}
		r.line(dir, "%s", trainLine(dir, cfg.Packets, cfg.Size, res.Reading))
		if try >= trainTries || res.LocalDrops > 0 || !train.HeldBurst(res.Reading) {
			return res, rows, nil
		}
		r.line(dir, "%s: the %s was held %s in that train and lost packets after: sent again", dir, dir.Sender(), units.FormatDuration(res.Reading.SenderHeld))
	}
}

// smallestLossyHead is the fewest packets that passed before a loss in
// any train that lost one (0: none lost).
func smallestLossyHead(rs []train.Reading) int {
	least := 0
	for _, r := range rs {
		if r.Got < r.Sent && (least == 0 || r.HeadPackets < least) {
			least = max(r.HeadPackets, 1)
		}
	}
	return least
}

// trainLine is a train's progress line.
func trainLine(dir vocab.Direction, n, size int, rd train.Reading) string {
	head := fmt.Sprintf("at %.1f Mbit/s", rd.HeadBps/1e6)
	if rd.HeadSpan <= 2*trainNoise {
		head = "unspaced" // within the stamps' noise: as fast as sent
	}
	tail := "no tail"
	if rd.TailBps > 0 {
		tail = fmt.Sprintf("tail at %.1f Mbit/s", rd.TailBps/1e6)
	}
	return fmt.Sprintf("%s: train of %d × %d B: %d arrived, the first %d %s, %s, delay rise %.2f ms", dir, n, size, rd.Got, rd.HeadPackets, head, tail, float64(rd.DelayRise)/1e6)
}

// Trains runs step 5's packet trains against t in each direction of cfg.
func Trains(ctx context.Context, n Network, cfg result.TrainsConfig, progress Progress) (*result.Trains, error) {
	cfg, err := prepare("trains", cfg)
	if err != nil {
		return nil, err
	}
	l, err := rfc6349.LinkByName(cfg.Link)
	if err != nil {
		return nil, err
	}
	if cfg.CIRBps <= 0 {
		cfg.CIRBps = cfg.RateBps
	}
	r := &runner{ctx: ctx, net: n, p: progress, baseline: cfg.RTT, bb: map[vocab.Direction]float64{}, mtu: map[vocab.Direction]int{},
		cfg: result.RFC6349Config{CIRBps: int64(cfg.CIRBps)}, link: l, res: &result.RFC6349{Warnings: []string{}}}
	out := &result.Trains{Directions: map[vocab.Direction]*result.TrainsDirection{}}
	out.Config, out.Meta = cfg, result.Meta{Schema: result.Schema, Tool: "fullpipe", Version: version.Release, Test: "trains", Started: time.Now(),
		Target: n.Target(), Client: result.Host{Software: version.Software(), Kernel: version.Kernel()}}
	for _, dir := range cfg.Directions {
		r.bb[dir], r.mtu[dir] = cfg.RateBps, cfg.MTU
		v, rows, err := r.trains(dir)
		bdp := rfc6349.BDPBytes(cfg.RateBps, cfg.RTT)
		d := &result.TrainsDirection{BDPBytes: bdp, Verdict: v, Rows: rows}
		if v != nil {
			d.SmallQueue = (rfc6349.ShapingEvidence{Trains: v, BDPBytes: bdp}).SmallQueue()
		}
		out.Directions[dir] = d
		if err != nil {
			out.Warnings, out.Server = r.res.Warnings, r.res.Server
			return out, err
		}
	}
	out.Warnings, out.Server = r.res.Warnings, r.res.Server
	return out, nil
}
