package controller

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/ping"
	"github.com/fullpipe/fullpipe/internal/train"
)

// metrics are the controller's Prometheus metrics on a registry of its
// own: this process's counters, and gauges read from the store at each
// scrape (the fleet's, the same from every replica).
type metrics struct {
	reg         *prometheus.Registry
	handler     http.Handler
	ended_      *prometheus.CounterVec // runs ended by outcome, as this replica saw them
	missed      prometheus.Counter
	booked      prometheus.Counter
	unbooked    prometheus.Counter
	skipped     prometheus.Counter
	leaseTaken  prometheus.Counter
	tickSeconds prometheus.Histogram
	webhook     *prometheus.CounterVec
	webhookLost prometheus.Counter
}

const ns = "fullpipe"

func newMetrics(c *Controller) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help})
	}
	m.ended_ = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "runs_ended_total",
		Help: "Runs ended, by outcome (finished, failed, missed), as this replica recorded them."}, []string{"outcome"})
	m.missed = m.ended_.WithLabelValues(string(fleet.RunMissed))
	m.booked = f("runs_booked_total", "Runs this replica's scheduler booked.")
	m.unbooked = f("runs_unbooked_total", "Pairs of an occurrence not booked: no free slot before the horizon, or a store error.")
	m.skipped = f("occurrences_skipped_total", "Schedule occurrences skipped because no controller scheduled them in time.")
	m.leaseTaken = f("scheduler_lease_taken_total", "Times this replica took the scheduler's lease.")
	m.tickSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: ns, Name: "scheduler_tick_seconds",
		Help: "Duration of the scheduler's ticks.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 8)})
	m.webhook = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "webhook_deliveries_total",
		Help: "Results webhook deliveries, by outcome (delivered, retried, failed)."}, []string{"outcome"})
	m.webhookLost = f("webhook_dropped_total", "Results not queued for the webhook: its queue was full.")
	for _, o := range []fleet.RunState{fleet.RunFinished, fleet.RunFailed, fleet.RunMissed} {
		m.ended_.WithLabelValues(string(o))
	}
	m.reg.MustRegister(m.ended_, m.booked, m.unbooked, m.skipped, m.leaseTaken, m.tickSeconds, m.webhook, m.webhookLost,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&fleetCollector{c: c})
	m.handler = promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	return m
}

func (m *metrics) ended(s fleet.RunState) { m.ended_.WithLabelValues(string(s)).Inc() }

func (c *Controller) serveMetrics(w http.ResponseWriter, r *http.Request, _ fleet.Token) error {
	c.metrics.handler.ServeHTTP(w, r)
	return nil
}

// fleetCollector reads the fleet's gauges from the store at each scrape.
type fleetCollector struct{ c *Controller }

var (
	descAgents = prometheus.NewDesc(ns+"_agents", "Enrolled agents by state.", []string{"state"}, nil)
	descRuns   = prometheus.NewDesc(ns+"_runs", "Runs by state, among the newest 10,000 of each state (capped).",
		[]string{"state"}, nil)
	descActive = prometheus.NewDesc(ns+"_scheduler_active", "1 when this replica holds the scheduler's lease.", nil, nil)
	pairLabels = []string{"source", "dest", "kind"}
	descTput   = prometheus.NewDesc(ns+"_pair_throughput_bits_per_second", "Latest result's throughput per pair and test kind.", pairLabels, nil)
	descRTT    = prometheus.NewDesc(ns+"_pair_rtt_seconds", "Latest result's minimum RTT per pair and test kind.", pairLabels, nil)
	descLoss   = prometheus.NewDesc(ns+"_pair_loss_ratio", "Latest result's loss (0 to 1) per pair and test kind.", pairLabels, nil)
	descBuffer = prometheus.NewDesc(ns+"_pair_buffer_delay_ratio", "Latest RFC 6349 result's buffer delay (0 to 1) per pair.", pairLabels, nil)
	descVerdct = prometheus.NewDesc(ns+"_pair_verdict", "Latest result's verdict per pair and test kind (1 on the verdict's series).",
		append(slices.Clone(pairLabels), "verdict"), nil)
	descDrop = prometheus.NewDesc(ns+"_pair_series_dropped", "Pairs whose latest figures are not exported: past the cap.", nil, nil)
	descLast = prometheus.NewDesc(ns+"_pair_result_timestamp_seconds", "When the latest result per pair and kind was received.", pairLabels, nil)
)

func (f *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descAgents, descRuns, descActive, descTput, descRTT, descLoss, descBuffer, descVerdct, descDrop, descLast} {
		ch <- d
	}
}

func (f *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := f.c
	active := 0.0
	if c.sched.active.Load() {
		active = 1
	}
	ch <- prometheus.MustNewConstMetric(descActive, prometheus.GaugeValue, active)
	if as, err := c.cfg.Store.Agents(ctx); err == nil {
		n := map[fleet.AgentState]float64{fleet.AgentUp: 0, fleet.AgentDown: 0, fleet.AgentNew: 0, fleet.AgentRevoked: 0}
		for _, a := range as {
			n[fleet.StateAt(a, c.cfg.Now(), c.cfg.DownAfter)]++
		}
		for s, v := range n {
			ch <- prometheus.MustNewConstMetric(descAgents, prometheus.GaugeValue, v, string(s))
		}
	} else {
		ch <- prometheus.NewInvalidMetric(descAgents, err)
	}
	for _, s := range []fleet.RunState{fleet.RunScheduled, fleet.RunRunning, fleet.RunFinished, fleet.RunFailed, fleet.RunMissed, fleet.RunCancelled} {
		rs, err := c.cfg.Store.Runs(ctx, fleet.RunFilter{States: []fleet.RunState{s}, Limit: maxLimit})
		if err != nil {
			ch <- prometheus.NewInvalidMetric(descRuns, err)
			break
		}
		ch <- prometheus.MustNewConstMetric(descRuns, prometheus.GaugeValue, float64(len(rs)), string(s))
	}
	f.pairs(ctx, ch)
}

// pairs exports the latest figures of at most MaxPairs (source, dest,
// kind), the most recently received first; verdicts outside the bounded
// set are "other".
func (f *fleetCollector) pairs(ctx context.Context, ch chan<- prometheus.Metric) {
	latest, err := f.c.cfg.Store.Latest(ctx, "")
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descTput, err)
		return
	}
	slices.SortFunc(latest, func(a, b fleet.Result) int {
		return cmp.Or(b.Received.Compare(a.Received), cmp.Compare(a.RunID, b.RunID))
	})
	dropped := max(0, len(latest)-f.c.cfg.MaxPairs)
	latest = latest[:len(latest)-dropped]
	ch <- prometheus.MustNewConstMetric(descDrop, prometheus.GaugeValue, float64(dropped))
	for _, r := range latest {
		l := []string{r.Source, r.Dest, r.Kind}
		g := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
		}
		g(descLast, float64(r.Received.UnixMilli())/1e3)
		fg := r.Figures
		if fg.ThroughputBps > 0 {
			g(descTput, fg.ThroughputBps)
		}
		if fg.RTTMs > 0 {
			g(descRTT, fg.RTTMs/1e3)
		}
		if fg.ThroughputBps > 0 || fg.LossPct > 0 {
			g(descLoss, fg.LossPct/100)
		}
		if fg.BufferDelayPct != 0 {
			g(descBuffer, fg.BufferDelayPct/100)
		}
		if fg.Verdict != "" {
			ch <- prometheus.MustNewConstMetric(descVerdct, prometheus.GaugeValue, 1, append(l, verdictLabel(fg.Verdict))...)
		}
	}
}

// verdictLabel bounds the verdict label: pass, fail and partial, the
// trains' verdicts and the single-ended (ping) ones ("clean" is both's),
// else "other".
func verdictLabel(v string) string {
	switch v {
	case VerdictPass, VerdictFail, VerdictPartial, string(train.Clean), string(train.Queue), string(train.Policer), string(train.Lossy), string(train.Unknown), string(train.Undecided),
		string(ping.Loss), string(ping.RateLimited), string(ping.Capacity), string(ping.Silent):
		return v
	}
	return "other"
}
