package rfc2544

import (
	"math"
	"sort"

	"github.com/fullpipe/fullpipe/internal/ber"
)

// LossSteps are RFC 2544 §26.3's offered loads for the frame loss rate
// table: 100 % of the line rate down to 10 % in steps of 10 %, as
// fractions.
func LossSteps() []float64 {
	out := make([]float64, 10)
	for i := range out {
		out[i] = float64(10-i) / 10
	}
	return out
}

// LossTableDone says whether the frame loss table may stop after the
// steps whose lost counts are lost, highest load first: RFC 2544 §26.3
// ends it after two successive steps without loss, or at the last step.
func LossTableDone(lost []uint64) bool {
	n := len(lost)
	return n >= len(LossSteps()) || (n >= 2 && lost[n-1] == 0 && lost[n-2] == 0)
}

// Trial is what one stream trial at one frame size saw.
type Trial struct {
	FrameBytes int     `json:"frame_bytes"`
	FPS        float64 `json:"offered_fps"`
	Sent       uint64  `json:"sent"`
	Received   uint64  `json:"received"`
}

// Lost is the trial's lost frames.
func (t Trial) Lost() uint64 { return t.Sent - min(t.Received, t.Sent) }

// LossRatio is the trial's lost share of its frames (0 when none sent).
func (t Trial) LossRatio() float64 {
	if t.Sent == 0 {
		return 0
	}
	return float64(t.Lost()) / float64(t.Sent)
}

// JudgeCeiling is the highest share of the line rate whose trials go to
// JudgeRate and FitBER: above it a line's own queue drops (and at the line
// rate itself a paced generator's jitter fills a queue that never drains).
const JudgeCeiling = 0.99

// JudgeRate asks ber.JudgeRate whether the loss of one frame size's
// trials (below JudgeCeiling of the line rate: above it a line's own
// queue drops) depends on the offered rate. Trials are pooled into bands of adjacent
// rates until each band expects at least ber.MinExpected frames lost and
// received under the pooled ratio (Cochran's rule): low rates of a short
// trial carry few frames each.
func JudgeRate(trials []Trial, lineFPS float64) (ber.RateJudgement, error) {
	var in []Trial
	var sent, lost float64
	for _, t := range trials {
		if t.Sent > 0 && t.FPS <= lineFPS*JudgeCeiling {
			in = append(in, t)
			sent += float64(t.Sent)
			lost += float64(t.Lost())
		}
	}
	sort.Slice(in, func(i, j int) bool { return in[i].FPS < in[j].FPS })
	p := 0.0
	if sent > 0 {
		p = lost / sent
	}
	var bands []ber.RatePoint
	var cur ber.RatePoint
	for _, t := range in {
		cur.RateBps = math.Max(cur.RateBps, t.FPS) // a band is labelled by its highest rate, frames/s
		cur.Sent += t.Sent
		cur.Received += min(t.Received, t.Sent)
		n := float64(cur.Sent)
		if n*p >= ber.MinExpected && n*(1-p) >= ber.MinExpected {
			bands = append(bands, cur)
			cur = ber.RatePoint{}
		}
	}
	if cur.Sent > 0 {
		if len(bands) == 0 {
			bands = append(bands, cur)
		} else { // the remainder joins the last band
			last := &bands[len(bands)-1]
			last.Sent += cur.Sent
			last.Received += cur.Received
			last.RateBps = math.Max(last.RateBps, cur.RateBps)
		}
	}
	if len(bands) < 2 && lost == 0 && sent > 0 {
		return ber.RateJudgement{Verdict: ber.RateNoLoss, P: 1}, nil
	}
	return ber.JudgeRate(bands)
}

// FitBER fits BER and a size-independent loss (ber.Fit) to the trials of
// every frame size below JudgeCeiling of the line rate, pooled per size. lineFPS
// maps a frame size to its line rate, frames/s; bits is ber.EthernetIPBits
// where the line corrupts the IP packet (the lab), ber.FrameBits on a real
// Ethernet line.
func FitBER(trials []Trial, lineFPS func(frame int) float64, bits ber.Bits) (ber.Estimate, error) {
	by := map[int]*ber.Point{}
	var sizes []int
	for _, t := range trials {
		if t.Sent == 0 || t.FPS > lineFPS(t.FrameBytes)*JudgeCeiling {
			continue
		}
		p := by[t.FrameBytes]
		if p == nil {
			p = &ber.Point{FrameBytes: t.FrameBytes}
			by[t.FrameBytes] = p
			sizes = append(sizes, t.FrameBytes)
		}
		p.Sent += t.Sent
		p.Received += min(t.Received, t.Sent)
	}
	sort.Ints(sizes)
	points := make([]ber.Point, len(sizes))
	for i, s := range sizes {
		points[i] = *by[s]
	}
	return ber.Fit(points, bits)
}
