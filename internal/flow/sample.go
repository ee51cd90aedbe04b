package flow

import (
	"net"

	"github.com/fullpipe/fullpipe/internal/tcpinfo"
	"github.com/fullpipe/fullpipe/internal/wire"
)

// SampleTCP reads c's TCP_INFO now and returns it in wire units, with the
// in-flight maximum the sender observed. It returns nil if the socket is
// gone (a sample is then simply missing, not zero).
func SampleTCP(c *net.TCPConn, ctr *Counter) *wire.TCPInfo {
	i, err := tcpinfo.Of(c)
	if err != nil {
		return nil
	}
	return &wire.TCPInfo{
		RTTMicros:           i.RTT.Microseconds(),
		RTTVarMicros:        i.RTTVar.Microseconds(),
		MinRTTMicros:        i.MinRTT.Microseconds(),
		CwndBytes:           i.CwndBytes,
		MSS:                 i.SndMSS,
		BytesSent:           i.BytesSent,
		BytesRetrans:        i.BytesRetrans,
		BytesAcked:          i.BytesAcked,
		RetransSegs:         i.TotalRetransSegs,
		DeliveryRateBps:     i.DeliveryRateBps,
		BusyMicros:          i.BusyTime.Microseconds(),
		RwndLimitedMicros:   i.RwndLimited.Microseconds(),
		SndbufLimitedMicros: i.SndbufLimited.Microseconds(),
		SndWnd:              i.SndWnd,
		InflightMaxBytes:    ctr.InflightMax.Load(),
	}
}

// StreamSample is a stream's cumulative figures as seen by this end: bytes
// written and TCP_INFO if this end sends, bytes read and their time span if
// it receives.
func StreamSample(c *net.TCPConn, ctr *Counter, stream int, clientSends, thisEndSends bool) wire.StreamSample {
	s := wire.StreamSample{Stream: stream, ClientSends: clientSends}
	if thisEndSends {
		s.BytesTx = ctr.Bytes.Load()
		s.Writes = ctr.Writes.Load()
		s.TCP = SampleTCP(c, ctr)
	} else {
		s.BytesRx = ctr.Bytes.Load()
		s.FirstRxNs, s.LastRxNs = ctr.FirstNs.Load(), ctr.LastNs.Load()
	}
	return s
}
