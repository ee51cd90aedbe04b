package tester

import (
	"sort"

	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/vocab"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// streamKey names a stream across both ends.
type streamKey struct {
	clientSends bool
	stream      int
}

// merged is one stream's cumulative figures from both ends: bytes and their
// time span from the receiver, TCP_INFO from the sender.
type merged struct {
	bytes         int64
	firstNs       int64
	lastNs        int64
	tcp           *wire.TCPInfo
	writes        int64
	hasRx, hasTCP bool
}

// merge combines the two ends' cumulative samples of one moment.
func merge(local, remote []wire.StreamSample) map[streamKey]merged {
	out := map[streamKey]merged{}
	add := func(samples []wire.StreamSample, localSide bool) {
		for _, s := range samples {
			k := streamKey{s.ClientSends, s.Stream}
			m := out[k]
			if receiverIsLocal := !s.ClientSends; receiverIsLocal == localSide {
				m.bytes, m.firstNs, m.lastNs, m.hasRx = s.BytesRx, s.FirstRxNs, s.LastRxNs, true
			} else {
				if s.TCP != nil {
					m.tcp, m.hasTCP = s.TCP, true
				}
				m.writes = max(m.writes, s.Writes)
			}
			out[k] = m
		}
	}
	add(local, true)
	add(remote, false)
	return out
}

func sortedKeys(m map[streamKey]merged) []streamKey {
	keys := make([]streamKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].clientSends != keys[j].clientSends {
			return keys[i].clientSends
		}
		return keys[i].stream < keys[j].stream
	})
	return keys
}

func direction(clientSends bool) (dir vocab.Direction, sender string) {
	if clientSends {
		return vocab.Up, "client"
	}
	return vocab.Down, "server"
}

// streamFigures fills a result stream from merged figures; bytes and
// retransmissions are the difference against prev (zero prev for totals).
func streamFigures(k streamKey, cur, prev merged, seconds float64) result.TCPStream {
	dir, sender := direction(k.clientSends)
	st := result.TCPStream{Stream: k.stream, Direction: dir, Sender: sender, Bytes: cur.bytes - prev.bytes, Writes: cur.writes - prev.writes}
	if seconds > 0 {
		st.ThroughputBps = float64(st.Bytes) * 8 / seconds
	}
	if t := cur.tcp; t != nil {
		st.HasTCPInfo = true
		st.RTTUs, st.RTTVarUs, st.RTTMinUs = t.RTTMicros, t.RTTVarMicros, t.MinRTTMicros
		st.CwndBytes, st.DeliveryRateBps, st.PeerWindowBytes = t.CwndBytes, t.DeliveryRateBps, t.SndWnd
		st.MSSBytes = t.MSS
		st.InflightMaxBytes = t.InflightMaxBytes
		st.BytesSent, st.BytesRetrans, st.RetransSegs, st.BusyUs = t.BytesSent, t.BytesRetrans, t.RetransSegs, t.BusyMicros
		if p := prev.tcp; p != nil {
			st.BytesSent -= min(p.BytesSent, st.BytesSent)
			st.BytesRetrans -= min(p.BytesRetrans, st.BytesRetrans)
			st.RetransSegs -= min(p.RetransSegs, st.RetransSegs)
			st.BusyUs -= min(p.BusyMicros, st.BusyUs)
		}
		busy := float64(t.BusyMicros)
		if busy > 0 {
			st.RwndLimitedPct = float64(t.RwndLimitedMicros) / busy * 100
			st.SndbufLimitedPct = float64(t.SndbufLimitedMicros) / busy * 100
			st.LimitedBy = limitedBy(st.RwndLimitedPct, st.SndbufLimitedPct)
		}
	}
	return st
}

// limitedBy names the limit that held the sender back most of its busy
// time: the receiver's window, the send buffer (which includes our exact
// --window bound), or else the congestion window / network.
func limitedBy(rwndPct, sndbufPct float64) string {
	switch {
	case rwndPct >= 50 && rwndPct >= sndbufPct:
		return "rwnd"
	case sndbufPct >= 50:
		return "sndbuf"
	}
	return "cwnd"
}

// windowLimit names "window" as the limit of a stream whose sender held
// the requested window in flight (within one segment): TCP_INFO cannot
// see our application-level bound, so it would say cwnd.
func (r *tcpRun) windowLimit(st result.TCPStream) result.TCPStream {
	seg := int64(st.MSSBytes) // the sender's segment: the window is full when less than one fits
	if seg == 0 {
		seg = 1500
	}
	if r.cfg.Window > 0 && st.HasTCPInfo && st.InflightMaxBytes >= int64(r.cfg.Window)-seg && st.LimitedBy == "cwnd" {
		st.LimitedBy = "window"
	}
	return st
}

// emit turns every interval both ends have sampled into a result interval.
func (r *tcpRun) emit() {
	for r.emitted < len(r.local) && r.emitted < len(r.remote) {
		k := r.emitted
		cur := merge(r.local[k], r.remote[k])
		secs := r.cfg.Interval.Seconds()
		iv := result.TCPInterval{StartS: float64(k) * secs, EndS: float64(k+1) * secs}
		for _, key := range sortedKeys(cur) {
			st := r.windowLimit(streamFigures(key, cur[key], r.prev[key], secs))
			iv.Streams = append(iv.Streams, st)
			iv.Bytes += st.Bytes
			iv.RetransSegs += st.RetransSegs
			if st.HasTCPInfo && st.RTTUs > 0 {
				if r.rttSamples == nil {
					r.rttSamples = map[bool][]int64{}
				}
				r.rttSamples[key.clientSends] = append(r.rttSamples[key.clientSends], st.RTTUs)
			}
		}
		iv.ThroughputBps = float64(iv.Bytes) * 8 / secs
		r.prev = cur
		r.intervals = append(r.intervals, iv)
		r.emitted++
		if r.progress != nil {
			r.progress(iv)
		}
	}
}

// emitFinal adds the stretch after the last full interval, if bytes moved
// in it: from the interval boundary to the last byte any receiver counted
// (each receiver's clock starts when it starts the test, so the end is
// good to about the control connection's RTT).
func (r *tcpRun) emitFinal(cur map[streamKey]merged) {
	var bytes, lastNs int64
	for k, m := range cur {
		bytes += m.bytes - r.prev[k].bytes
		lastNs = max(lastNs, m.lastNs)
	}
	secs := r.cfg.Interval.Seconds()
	start := float64(r.emitted) * secs
	end := float64(lastNs) / 1e9
	if bytes <= 0 || end <= start {
		return
	}
	iv := result.TCPInterval{StartS: start, EndS: end}
	for _, key := range sortedKeys(cur) {
		st := r.windowLimit(streamFigures(key, cur[key], r.prev[key], end-start))
		iv.Streams = append(iv.Streams, st)
		iv.Bytes += st.Bytes
		iv.RetransSegs += st.RetransSegs
	}
	iv.ThroughputBps = float64(iv.Bytes) * 8 / (end - start)
	r.prev = cur
	r.intervals = append(r.intervals, iv)
	r.emitted++
	if r.progress != nil {
		r.progress(iv)
	}
}

// summary builds the whole-test figures from the final samples: the local
// streams now and the responder's result (nil if it never came).
func (r *tcpRun) summary(final *wire.Result) result.TCPSummary {
	var remote []wire.StreamSample
	switch {
	case final != nil:
		remote = final.Streams
	case len(r.remote) > 0:
		// No result (the responder died): its last interval's samples are
		// cumulative too, so what it counted up to then still counts.
		remote = r.remote[len(r.remote)-1]
	}
	cur := merge(r.sampleLocal(), remote)
	r.emitFinal(cur)
	sum := result.TCPSummary{MeasuredAt: "receiver", WindowRequested: r.cfg.Window, Directions: map[vocab.Direction]*result.TCPDirection{}}
	type span struct{ first, last int64 }
	spans := map[vocab.Direction]*span{}
	for _, key := range sortedKeys(cur) {
		m := cur[key]
		st := r.windowLimit(streamFigures(key, m, merged{}, 0))
		dir := st.Direction
		d := sum.Directions[dir]
		if d == nil {
			d = &result.TCPDirection{}
			sum.Directions[dir] = d
			spans[dir] = &span{}
		}
		if m.hasRx && m.firstNs > 0 {
			sp := spans[dir]
			if sp.first == 0 || m.firstNs < sp.first {
				sp.first = m.firstNs
			}
			sp.last = max(sp.last, m.lastNs)
			if secs := float64(m.lastNs-m.firstNs) / 1e9; secs > 0 {
				st.ThroughputBps = float64(st.Bytes) * 8 / secs
			}
		}
		d.Bytes += st.Bytes
		d.BytesSent += st.BytesSent
		d.BytesRetrans += st.BytesRetrans
		d.RetransSegs += st.RetransSegs
		if st.HasTCPInfo && st.RTTMinUs > 0 && (d.RTTMinUs == 0 || st.RTTMinUs < d.RTTMinUs) {
			d.RTTMinUs = st.RTTMinUs
		}
		sum.WindowEffective = max(sum.WindowEffective, st.InflightMaxBytes)
		sum.Streams = append(sum.Streams, st)
	}
	for dir, d := range sum.Directions {
		sp := spans[dir]
		d.IntervalS = float64(sp.last-sp.first) / 1e9
		if d.IntervalS > 0 {
			d.ThroughputBps = float64(d.Bytes) * 8 / d.IntervalS
		}
		d.EfficiencyPct = result.Efficiency(d.BytesSent, d.BytesRetrans)
		d.RTTMeanUs = meanRTT(r.rttSamples[dir == vocab.Up], sum.Streams, dir)
		t := &sum.TCPDirection
		t.Bytes += d.Bytes
		t.ThroughputBps += d.ThroughputBps
		t.IntervalS = max(t.IntervalS, d.IntervalS)
		t.BytesSent += d.BytesSent
		t.BytesRetrans += d.BytesRetrans
		t.RetransSegs += d.RetransSegs
		if d.RTTMinUs > 0 && (t.RTTMinUs == 0 || d.RTTMinUs < t.RTTMinUs) {
			t.RTTMinUs = d.RTTMinUs
		}
	}
	sum.EfficiencyPct = result.Efficiency(sum.BytesSent, sum.BytesRetrans)
	var all []int64
	for _, v := range r.rttSamples {
		all = append(all, v...)
	}
	sum.RTTMeanUs = meanRTT(all, sum.Streams, "")
	return sum
}

// meanRTT is the mean of the senders' smoothed RTT samples taken each
// interval; a test shorter than one interval falls back to the final
// smoothed RTT of its streams.
func meanRTT(samples []int64, streams []result.TCPStream, dir vocab.Direction) int64 {
	if len(samples) == 0 {
		for _, st := range streams {
			if st.HasTCPInfo && (dir == "" || st.Direction == dir) {
				samples = append(samples, st.RTTUs)
			}
		}
	}
	if len(samples) == 0 {
		return 0
	}
	var t int64
	for _, v := range samples {
		t += v
	}
	return t / int64(len(samples))
}
