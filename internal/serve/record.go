package serve

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fullpipe/fullpipe/internal/wire"
)

// RecordSchema is the version of Record's JSON; a reader must check it.
const RecordSchema = 1

// Record is the responder's view of one test: what --results-dir keeps,
// one file per test. Times: Start and End are wall clock (labels),
// DurationNs is monotonic.
type Record struct {
	Schema     int          `json:"schema"`
	Type       string       `json:"type"` // "fullpipe-responder-test"
	Software   string       `json:"software"`
	Session    wire.Cookie  `json:"session"`
	Peer       string       `json:"peer"` // the control connection's remote address
	Start      time.Time    `json:"start"`
	End        time.Time    `json:"end"`
	DurationNs int64        `json:"duration_ns"`
	Request    wire.Request `json:"request"`
	Figures    Figures      `json:"figures"`
	Partial    bool         `json:"partial"`
	Reason     string       `json:"reason,omitempty"`
	Result     wire.Result  `json:"result"` // what the client was (or would have been) sent
}

// Figures sum up a test as the responder measured it.
type Figures struct {
	Streams       int    `json:"streams"`        // data connections
	BytesRx       int64  `json:"bytes_rx"`       // TCP payload bytes the responder read
	BytesTx       int64  `json:"bytes_tx"`       // TCP payload bytes the responder wrote
	UDPPacketsRx  uint64 `json:"udp_packets_rx"` // UDP datagrams received
	UDPPacketsTx  uint64 `json:"udp_packets_tx"` // UDP datagrams sent
	UDPBytesTotal uint64 `json:"udp_bytes"`      // UDP payload bytes, received plus sent
}

func figuresOf(res wire.Result) Figures {
	f := Figures{Streams: len(res.Streams)}
	for _, st := range res.Streams {
		f.BytesRx += st.BytesRx
		f.BytesTx += st.BytesTx
	}
	if u := res.UDP; u != nil {
		f.UDPPacketsRx, f.UDPPacketsTx = u.Packets, u.SentPackets
		f.UDPBytesTotal = u.Bytes + u.SentBytes
	}
	return f
}

// record logs a finished test's figures in one line and, with a results
// directory, stores its Record there. Called once per started session,
// from its control goroutine, before the result goes to the client.
func (ss *session) record(res wire.Result) {
	end := time.Now()
	dur := ss.clock.Since()
	rec := Record{
		Schema: RecordSchema, Type: "fullpipe-responder-test", Software: ss.srv.cfg.Software,
		Session: ss.cookie, Peer: ss.peer, Start: end.Add(-dur).UTC(), End: end.UTC(), DurationNs: int64(dur),
		Request: ss.req, Figures: figuresOf(res), Partial: res.Partial, Reason: res.Reason, Result: res,
	}
	f := rec.Figures
	ss.log.Info("test figures", "partial", rec.Partial, "reason", rec.Reason, "duration_ms", dur.Milliseconds(),
		"streams", f.Streams, "bytes_rx", f.BytesRx, "bytes_tx", f.BytesTx,
		"udp_packets_rx", f.UDPPacketsRx, "udp_packets_tx", f.UDPPacketsTx, "udp_bytes", f.UDPBytesTotal)
	if dir := ss.srv.cfg.ResultsDir; dir != "" {
		if err := writeRecord(dir, rec); err != nil {
			ss.log.Error("could not store the test's result", "dir", dir, "err", err)
		}
	}
}

// recordName names a record file by its end time and session, so names
// sort by time and never collide.
func recordName(rec Record) string {
	return rec.End.Format("20060102T150405.000000000Z") + "-" + rec.Session.String() + ".json"
}

// writeRecord stores rec in dir atomically: a temporary file, synced,
// then renamed, so a reader never sees half a document.
func writeRecord(dir string, rec Record) error {
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".partial-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o640); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, recordName(rec)))
}

// checkResultsDir makes dir if needed and proves the responder can write
// there, so a bad --results-dir fails at start, not after the first test.
func checkResultsDir(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("results directory: %w (create it, writable by the responder's user)", err)
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("results directory %s is not writable: %w (give the responder's user write access, or with systemd use StateDirectory=)", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
