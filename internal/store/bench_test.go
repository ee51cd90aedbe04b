package store

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/testkit/pgtest"
)

// BenchmarkPutResult: many concurrent clients (16 per CPU) each storing
// new results, as agents uploading at once; the fleet wants ≥ 1,000/s
// on PostgreSQL. postgres is the tests' server (no fsync),
// postgres-durable one that flushes every commit to disk, as in
// production; SQLite runs in WAL mode with synchronous=FULL (the
// default: every commit synced) and, to compare, NORMAL (synced at
// checkpoints: the last commits may be lost on power loss, never
// corrupt).
//
//	go test -run '^$' -bench PutResult ./internal/store
func BenchmarkPutResult(b *testing.B) {
	doc := `{"kind":"tcp","config":{"duration_ns":10000000000},"intervals":[` +
		`{"t_ns":1000000000,"bytes":117000000},{"t_ns":2000000000,"bytes":117500000}],"summary":{"throughput_bps":9.4e8}}`
	durable := pgtest.New("fsync=on", "synchronous_commit=on", "full_page_writes=on")
	defer durable.Close()
	for _, backend := range []string{"sqlite", "sqlite-normal", "postgres", "postgres-durable"} {
		b.Run(backend, func(b *testing.B) {
			dsn := b.TempDir() + "/fleet.db"
			switch backend {
			case "sqlite-normal":
				dsn = "file:" + dsn + "?_synchronous=NORMAL"
			case "postgres":
				dsn = pg.Database(b)
			case "postgres-durable":
				dsn = durable.Database(b)
			}
			db := open(b, dsn)
			var n atomic.Int64
			b.SetParallelism(16)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					if _, err := db.PutResult(ctx, result(fmt.Sprint("run", i), "a", "b", "tcp", t0.Add(time.Duration(i)*time.Millisecond), doc)); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(n.Load())/time.Since(start).Seconds(), "results/s")
		})
	}
}
