package method

import (
	"context"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/dispersion"
	"github.com/fullpipe/fullpipe/internal/frame"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/rfc6349"
	"github.com/fullpipe/fullpipe/internal/schedule"
	"github.com/fullpipe/fullpipe/internal/tester"
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

// The trains' shape.
const (
	// trainFirst is a series' first train, in packets; each next one
	// doubles, up to the longest the path calls for (train.Longest).
	trainFirst = 16
	// trainPace paces the trains at this many times the larger of BB and
	// the CIR: fast enough that a queue fills (by 3/4 of what arrives)
	// and a bucket empties, slow enough not to queue first in this
	// host's own device queue.
	trainPace = 4
	// trainRefill ends each train's drain: time for a policer's bucket
	// to fill again before the next train.
	trainRefill = 250 * time.Millisecond
	// trainSmallHead: a first loss within this many full-size packets (a
	// bucket or queue of a few kB) sends the series again with packets
	// it holds several of.
	trainSmallHead = 8
)

// trainShape is what one series of trains is made from.
type trainShape struct {
	bb, cir  float64       // the bottleneck's rate and the CIR, bit/s at layer 2
	baseline time.Duration // the RTT the drains and the longest train are sized by
	size     int           // a packet's payload, bytes
	overhead int           // the IPv4 and UDP headers and the link's framing around it
}

// trainShape is the shape of dir's first series: its full-size packets.
func (r *runner) trainShape(dir vocab.Direction) trainShape {
	return fullSize(r.bb[dir], float64(r.cfg.CIRBps), r.baseline, r.mtu[dir], r.link.Overhead)
}

// fullSize is the shape of trains of full-size packets on a path of MTU
// mtu and a link of linkOverhead bytes of framing.
func fullSize(bb, cir float64, baseline time.Duration, mtu, linkOverhead int) trainShape {
	return trainShape{bb: bb, cir: cir, baseline: baseline, size: mtu - frame.IPv4UDP, overhead: frame.IPv4UDP + linkOverhead}
}

// smaller is s with packets that a bucket or queue of head full-size
// packets holds several of (train.PacketSize), for a second series.
func (s trainShape) smaller(head int) trainShape {
	s.size = max(train.MinPacket, train.PacketSize(float64(head*(s.size+s.overhead)))-s.overhead)
	return s
}

// sender is the trains' pace, bit/s at layer 2.
func (s trainShape) sender() float64 { return trainPace * max(s.bb, s.cir) }

// lengths are the series' trains, in packets: from trainFirst, doubling,
// to the longest the path calls for.
func (s trainShape) lengths() []int {
	per := s.size + s.overhead
	longest := max(2, train.Longest(s.bb, rfc6349.BDPBytes(s.bb, s.baseline), s.sender(), per)/per)
	var out []int
	for n := trainFirst; ; n *= 2 {
		n = min(n, longest)
		out = append(out, n)
		if n >= longest {
			return out
		}
	}
}

// config is the train of n packets in direction dir. Its drain: the
// path's delay twice, a full queue of the train's bytes at the
// bottleneck, and trainRefill.
func (s trainShape) config(n int, dir vocab.Direction) result.TrainConfig {
	per := s.size + s.overhead
	drain := schedule.SatAdd(schedule.SatAdd(2*s.baseline, schedule.BitsTime(float64(n*per)*8, s.bb)), trainRefill)
	return result.TrainConfig{Packets: n, Size: s.size, Overhead: s.overhead, Reverse: dir == vocab.Down, Drain: drain,
		RateBps: int64(s.sender() * float64(s.size) / float64(per))}
}

// trainsPlan is one direction's trains at their longest (trains): the
// series of full-size packets, then the longest second series of
// smaller ones, each train sent once, and trainResends sends again of
// the longest train of either (sendTrain).
func trainsPlan(s trainShape, dir vocab.Direction, rtt time.Duration) schedule.Cost {
	first, longest := seriesPlan(s, dir, rtt)
	var second schedule.Cost
	if s.size > train.MinPacket {
		for head := 1; head < trainSmallHead; head++ {
			series, one := seriesPlan(s.smaller(head), dir, rtt)
			second = schedule.Longer(second, series, rtt)
			longest = schedule.Longer(longest, one, rtt)
		}
	}
	return first.Plus(second).Plus(longest.Times(trainResends))
}

// seriesPlan is one series (trainSeries) to its longest train, each
// train sent once and arriving at the bottleneck's rate, and the longest
// train's own cost.
func seriesPlan(s trainShape, dir vocab.Direction, rtt time.Duration) (series, longest schedule.Cost) {
	for _, n := range s.lengths() {
		cfg := s.config(n, dir)
		one := tester.TrainCost(cfg, tester.TrainSpan(cfg, s.bb), rtt)
		series, longest = series.Plus(one), schedule.Longer(longest, one, rtt)
	}
	return series, longest
}

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
	shape := r.trainShape(dir)
	rs, rows, err := r.trainSeries(dir, shape)
	if err != nil {
		return nil, rows, err
	}
	if small := smallestLossyHead(rs); small > 0 && small < trainSmallHead && shape.size > train.MinPacket {
		var more []result.TrainRow
		rs, more, err = r.trainSeries(dir, shape.smaller(small))
		rows = append(rows, more...)
		if err != nil {
			return nil, rows, err
		}
	}
	v := train.Classify(rs, trainNoise)
	return &v, rows, nil
}

// trainSeries sends the trains of one shape, doubling from trainFirst
// packets, until they decide or reach the longest.
func (r *runner) trainSeries(dir vocab.Direction, shape trainShape) ([]dispersion.Reading, []result.TrainRow, error) {
	size, sender := shape.size, shape.sender()
	var rs []dispersion.Reading
	var rows []result.TrainRow
	for _, n := range shape.lengths() {
		res, tries, err := r.sendTrain(dir, shape.config(n, dir))
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
		if train.Enough(rs, trainNoise) {
			return rs, rows, nil
		}
	}
	return rs, rows, nil
}

// trainTries bounds the sends of one train whose sender was held, and
// trainResends the sends again of one direction's trains together (the
// scheduler books them: trainsPlan). A send costs the train and its
// drain (under 0.6 s at the longest), and beside a busy core most sends
// of a long fast train are held: CI run 40's policed path (1024 packets
// at 400 Mbit/s) had a train held in each of its 3 sends in 4 runs of 5.
// Each further send is a fresh chance of an unheld one; a budget per
// direction, not per train, keeps a slot from growing with the series
// (six sends of every train would book an RFC 6349 run 8.6 minutes at
// 50 ms, this budget 5.6, against 5.1 before resends were booked).
const (
	trainTries   = 6
	trainResends = 10
)

// sendTrain sends one train, and again while it lost packets after its
// sender was held longer than its pace allows (train.HeldBurst), at most
// trainTries times in all and while the direction has resends left
// (trainResends): what such a train's host did is not the path's to
// read, and on a shared host the next send may keep its pace. It
// returns the last send, and a row for each.
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
		if try >= trainTries || r.resent[dir] >= trainResends || res.LocalDrops > 0 || !train.HeldBurst(res.Reading) {
			return res, rows, nil
		}
		if r.resent == nil {
			r.resent = map[vocab.Direction]int{}
		}
		r.resent[dir]++
		r.line(dir, "%s: the %s was held %s in that train and lost packets after: sent again", dir, dir.Sender(), units.FormatDuration(res.Reading.SenderHeld))
	}
}

// smallestLossyHead is the fewest packets that passed before a loss in
// any train that lost one (0: none lost).
func smallestLossyHead(rs []dispersion.Reading) int {
	least := 0
	for _, r := range rs {
		if r.Got < r.Sent && (least == 0 || r.HeadPackets < least) {
			least = max(r.HeadPackets, 1)
		}
	}
	return least
}

// trainLine is a train's progress line.
func trainLine(dir vocab.Direction, n, size int, rd dispersion.Reading) string {
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
	r := trainsRunner(cfg, l)
	r.ctx, r.net, r.p = ctx, n, progress
	out := &result.Trains{Directions: map[vocab.Direction]*result.TrainsDirection{}}
	out.Config, out.Meta = cfg, result.Meta{Schema: result.Schema, Tool: "fullpipe", Version: version.Release, Test: "trains", Started: time.Now(),
		Target: n.Target(), Client: result.Host{Software: version.Software(), Kernel: version.Kernel()}}
	for _, dir := range cfg.Directions {
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

// trainsRunner is the runner the trains method sends cfg's trains with
// (cfg with its defaults and its CIR): the path as cfg states it, in
// each of its directions.
func trainsRunner(cfg result.TrainsConfig, l rfc6349.Link) *runner {
	r := &runner{baseline: cfg.RTT, bb: map[vocab.Direction]float64{}, mtu: map[vocab.Direction]int{},
		cfg: result.RFC6349Config{CIRBps: int64(cfg.CIRBps)}, link: l, res: &result.RFC6349{Warnings: []string{}}}
	for _, dir := range cfg.Directions {
		r.bb[dir], r.mtu[dir] = cfg.RateBps, cfg.MTU
	}
	return r
}

// TrainsCost is the trains method's plan (Trains): each direction's
// trains at their longest, at the rate and RTT cfg states, on a path of
// round trip rtt.
func TrainsCost(cfg result.TrainsConfig, rtt time.Duration) (schedule.Cost, error) {
	l, err := rfc6349.LinkByName(cfg.Link)
	if err != nil {
		return schedule.Cost{}, err
	}
	r := trainsRunner(cfg, l)
	var all schedule.Cost
	for _, dir := range cfg.Directions {
		all = all.Plus(trainsPlan(r.trainShape(dir), dir, rtt))
	}
	return all, nil
}
