package ping

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// run draws n probes offered at perSec through a token bucket (rate,
// burst; rate 0: none) and a random loss, each answered one with rtt
// plus up to 50 µs of jitter, from a seeded source.
func run(seed uint64, n int, perSec, rate float64, burst int, lossPct float64, rtt time.Duration) []Fate {
	rng := rand.New(rand.NewPCG(seed, 1))
	gap := time.Duration(float64(time.Second) / perSec)
	tokens := float64(burst)
	fates := make([]Fate, n)
	for i := range fates {
		f := Fate{Sent: time.Duration(i) * gap}
		pass := true
		if rate > 0 {
			if i > 0 {
				tokens = min(float64(burst), tokens+rate*gap.Seconds())
			}
			pass = tokens >= 1
			if pass {
				tokens--
			}
		}
		if pass && rng.Float64()*100 >= lossPct {
			f.Answered, f.RTT = true, rtt+time.Duration(rng.IntN(50_000))
		}
		fates[i] = f
	}
	return fates
}

func TestClassifyTable(t *testing.T) {
	cases := []struct {
		name       string
		perSec     float64
		n          int
		rate       float64
		burst      int
		lossPct    float64
		want       Kind
		wantPerSec float64
	}{
		{"no loss", 100, 200, 0, 0, 0, Clean, 0},
		{"linux per-peer 10/s burst 6 at 100/s", 100, 300, 10, 6, 0, RateLimited, 10},
		{"linux per-peer 1/s burst 6 at 10/s", 10, 100, 1, 6, 0, RateLimited, 1},
		{"global 1000/s burst 50 at 2000/s", 2000, 4000, 1000, 50, 0, RateLimited, 1000},
		{"limiter with 2 % line loss", 100, 500, 20, 6, 2, RateLimited, 20},
		{"limiter without burst", 100, 300, 25, 1, 0, RateLimited, 25},
		{"random 1 %", 100, 1000, 0, 0, 1, Loss, 0},
		{"random 10 %", 100, 1000, 0, 0, 10, Loss, 0},
		{"random 50 %", 100, 300, 0, 0, 50, Loss, 0},
		{"random 90 %", 100, 300, 0, 0, 90, Loss, 0},
		{"too few to judge", 100, 10, 2, 2, 0, Loss, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for seed := uint64(1); seed <= 20; seed++ {
				v := Classify(run(seed, c.n, c.perSec, c.rate, c.burst, c.lossPct, time.Millisecond))
				if v.Kind != c.want {
					t.Fatalf("seed %d: %s (%+v), want %s", seed, v.Kind, v, c.want)
				}
				if c.want == RateLimited && math.Abs(v.LimitPerSec-c.wantPerSec)/c.wantPerSec > 0.1 {
					t.Fatalf("seed %d: limit %.2f/s, want %.0f/s within 10 %%", seed, v.LimitPerSec, c.wantPerSec)
				}
				if c.want == RateLimited && c.lossPct == 0 && v.Burst != c.burst {
					t.Errorf("seed %d: burst %d, want %d", seed, v.Burst, c.burst)
				}
			}
		})
	}
}

func TestClassifySilentAndEmpty(t *testing.T) {
	if v := Classify(run(1, 50, 100, 0, 0, 100, time.Millisecond)); v.Kind != Silent || v.LossPct != 100 {
		t.Errorf("all lost: %+v", v)
	}
	if v := Classify(nil); v.Sent != 0 || v.Kind != "" {
		t.Errorf("none: %+v", v)
	}
}

// A bottleneck with a queue passes a burst (the queue filling) then its
// rate, as a limiter does, but the replies after the burst wait in the
// queue: the verdict is the path's capacity.
func TestClassifyQueueIsCapacity(t *testing.T) {
	fates := run(3, 400, 200, 100, 20, 0, time.Millisecond)
	for i := range fates {
		if fates[i].Answered && i >= 20 {
			fates[i].RTT += 100 * time.Millisecond // 20 packets at 100/s wait 200 ms; half full on average
		}
	}
	v := Classify(fates)
	if v.Kind != Capacity || v.QueueDelay < 90*time.Millisecond {
		t.Fatalf("%+v, want capacity with ~100 ms of queue", v)
	}
}

// The search meets a path that loses nothing below threshold probes/s
// and (rate - threshold)/rate above it.
func TestSearchThreshold(t *testing.T) {
	for _, threshold := range []float64{50, 777, 9000, 20000} {
		s := NewSearch(10, 10000, 0.02, 0.005)
		trials := 0
		for {
			r, ok := s.Next()
			if !ok {
				break
			}
			trials++
			loss := 0.0
			if r > threshold {
				loss = (r - threshold) / r
			}
			s.Record(r, loss)
		}
		zero, loose := s.Result()
		wantZero, wantLoose := min(threshold, 10000), min(threshold/(1-0.005), 10000)
		if zero > wantZero || zero < wantZero/1.02 {
			t.Errorf("threshold %v: zero-loss %v, want %v within 2 %%", threshold, zero, wantZero)
		}
		if loose > wantLoose || loose < wantLoose/1.02 {
			t.Errorf("threshold %v: 0.5 %%-loss %v, want %v within 2 %%", threshold, loose, wantLoose)
		}
		if trials > MaxTrials {
			t.Errorf("threshold %v: %d trials", threshold, trials)
		}
		t.Logf("threshold %v: zero %.1f, 0.5 %% %.1f in %d trials", threshold, zero, loose, trials)
	}
}

func TestSearchNothingPasses(t *testing.T) {
	s := NewSearch(10, 1000, 0.05, 0.005)
	for i := 0; ; i++ {
		r, ok := s.Next()
		if !ok {
			break
		}
		if i > MaxTrials {
			t.Fatal("unbounded")
		}
		s.Record(r, 0.3)
	}
	if z, l := s.Result(); z != 0 || l != 0 {
		t.Errorf("got %v %v, want none", z, l)
	}
}

// A limiter on a jittery path (RTT 20 ms + up to 5 ms) stays a limiter:
// its late answers are no slower than its burst's.
func TestClassifyJitteryLimiter(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 2))
		fates := run(seed, 400, 100, 10, 6, 0, 20*time.Millisecond)
		for i := range fates {
			fates[i].RTT += time.Duration(rng.IntN(5_000_000))
		}
		if v := Classify(fates); v.Kind != RateLimited {
			t.Fatalf("seed %d: %+v", seed, v)
		}
	}
}

// A queue whose late answers vary widely (both directions' queues
// filling and draining) is still a queue: its fastest late answer waits.
func TestClassifyNoisyQueue(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	fates := run(9, 1000, 8000, 2000, 200, 0, 3*time.Millisecond)
	for i := range fates {
		if fates[i].Answered && i > 200 {
			fates[i].RTT += 60*time.Millisecond + time.Duration(rng.IntN(80_000_000))
		}
	}
	if v := Classify(fates); v.Kind != Capacity {
		t.Fatalf("%+v, want capacity", v)
	}
}
