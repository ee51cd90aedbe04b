package lab

import (
	"math"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/train"
	"github.com/fullpipe/fullpipe/internal/vocab"
)

// TestRFC6349TinyBucket: issue 21 item 6, a policer of 120 Mbit/s with a
// bucket of 15 kB (1 ms of its rate: 10 datagrams of 1500 B) at 10 ms RTT,
// `rfc6349 --quick --direction up --cir 120M --link none`, which another
// emulator read in 1 run of 2 as "no rate limit, but loss on the line"
// with the diagnosis buffer. The trains must read the policer, its rate
// and bucket within 20 % plus their error bars (with --link none they
// count IP bytes, as the policer does: no scaling), or say undecided; a
// wrong cause (buffer, loss, a queue, a clean path) is the one outcome
// not allowed. When undecided the diagnosis names neither a policer, a
// buffer nor line loss. The run is one the lab held (runRFC: its trains by TrainBudget): on these
// 2 cores, shared, a late forwarder is itself a sender that stalls. (First run, the 2 CPUs 100 % busy with other tests, 11,361
// packets written late, p90 0.88 ms: trains of 16 to 256, policer 99.1 ±
// 2.0 Mbit/s, bucket 15,401 ± 847 B; the diagnosis set the reading aside
// for the starved tester, rightly.)
func TestRFC6349TinyBucket(t *testing.T) {
	needRoot(t)
	bin := buildFullpipe(t)
	const rate, bucket = 120e6, 15_000
	l := startLab(t, "ttb", Direction{PoliceBps: rate, PoliceBurst: bucket, Delay: 5 * time.Millisecond})
	r, a := runRFC(t, bin, l, "--cir", "120M", "--link", "none") // held: runRFC
	t.Logf("the forwarder's p90 write lateness over the held run %v", a.LateQuantile(0.9))
	tr := r.ShapingSum.Trains
	if tr == nil {
		t.Fatalf("no trains in the shaping step")
	}
	for _, row := range r.ShapingSum.TrainRows {
		rd := row.Reading
		t.Logf("train %d × %d B: head %d at %.1f Mbit/s, tail %d at %.1f Mbit/s (sent at %.1f)", row.Packets, row.SizeBytes, rd.HeadPackets, rd.HeadBps/1e6, rd.TailPackets, rd.TailBps/1e6, rd.TailSendBps/1e6)
	}
	t.Logf("trains: %s, rate %s bit/s, bucket %s B: %s", tr.Kind, tr.RateBps, tr.BucketBytes, tr.Why)
	t.Logf("shaping %s; diagnosis %+v", r.ShapingSum.Verdict, r.Diagnosis)
	if hasCause(r, vocab.CauseBuffer, "") || hasCause(r, vocab.CauseLoss, "") {
		t.Errorf("a wrong cause: diagnosis %+v", r.Diagnosis)
	}
	switch tr.Kind {
	case train.Policer:
		// The diagnosis names the policer, or sets the trains' reading
		// aside when the tester was starved of CPU around them (a
		// starved sender's bursts read the same): the host, not a wrong
		// cause.
		if r.ShapingSum.Verdict != vocab.Policed || !(hasCause(r, vocab.CausePolicer, "bucket") || hasCause(r, vocab.CauseHost, "set aside")) {
			t.Errorf("trains read the policer but the verdict is %q, the diagnosis %+v", r.ShapingSum.Verdict, r.Diagnosis)
		}
		if math.Abs(tr.RateBps.Value-rate) > 0.2*rate+tr.RateBps.Err {
			t.Errorf("rate %s bit/s, want %.0f ± 20 %% ± the error bar", tr.RateBps, rate)
		}
		if math.Abs(tr.BucketBytes.Value-bucket) > 0.2*bucket+tr.BucketBytes.Err {
			t.Errorf("bucket %s B, want %d ± 20 %% ± the error bar", tr.BucketBytes, bucket)
		}
	case train.Undecided:
		if r.ShapingSum.Verdict != vocab.Undecided || hasCause(r, vocab.CausePolicer, "") {
			t.Errorf("undecided trains but the verdict is %q, the diagnosis %+v", r.ShapingSum.Verdict, r.Diagnosis)
		}
	default:
		t.Errorf("trains read %s, want policer or undecided: %s", tr.Kind, tr.Why)
	}
}
