package result

import (
	"time"

	"github.com/fullpipe/fullpipe/internal/dispersion"
	"github.com/fullpipe/fullpipe/internal/train"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// The packet trains' document (fullpipe trains), whose rows step 5 of
// RFC 6349 shares.

// TrainRow is one packet train of step 5, as its receiver read it.
type TrainRow struct {
	Packets    int                `json:"packets"`
	SizeBytes  int                `json:"size_bytes"` // UDP payload; rates count size + the IP, UDP and link overhead
	Reading    dispersion.Reading `json:"reading"`
	LocalDrops uint32             `json:"local_drops"` // dropped by a host's own socket: the train is not read
}

// TrainsConfig runs step 5's packet trains alone (`fullpipe trains`):
// what the method knows by then is given instead of measured.
type TrainsConfig struct {
	Directions []vocab.Direction `json:"directions"`
	RateBps    float64           `json:"rate_bps"`  // the bottleneck's rate as far as known (the CIR, or a measured BB), layer 2
	CIRBps     float64           `json:"cir_bps"`   // the contracted rate (0: RateBps)
	RTT        time.Duration     `json:"rtt_ns"`    // base RTT
	MTU        int               `json:"mtu_bytes"` // path MTU, both ways
	Link       string            `json:"link"`      // framing the rates count (rfc6349.LinkByName)
}

// Trains is what the trains showed per direction.
type Trains struct {
	Meta
	Config     TrainsConfig                         `json:"config"`
	Directions map[vocab.Direction]*TrainsDirection `json:"directions"`
	Warnings   []string                             `json:"warnings"`
}

// TrainsDirection is one direction's verdict and trains.
type TrainsDirection struct {
	BDPBytes   float64        `json:"bdp_bytes"`
	Verdict    *train.Verdict `json:"verdict"`
	SmallQueue bool           `json:"small_queue"` // a queue below 3/7 of the BDP
	Rows       []TrainRow     `json:"trains"`
}
