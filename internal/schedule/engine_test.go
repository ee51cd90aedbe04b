package schedule

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestEngineMirror: the waits and steps this package copies from the
// engine and the methods (which it may not import: they are above it)
// are still what their code does. When a line here fails, the engine
// changed: update the length or the margin (length.go, method.go,
// slot.go) to match, then the line.
func TestEngineMirror(t *testing.T) {
	for _, c := range []struct {
		file, name string
		want       time.Duration
	}{
		{"tester/tcp.go", "bytesModeMaxRun", bytesModeMaxRun},
		{"tester/tcp.go", "idleProbeGap", idleProbeGap},
		{"tester/sweep.go", "probeReplyWait", probeReplyWait},
		{"method/sweep.go", "baselineGap", baselineGap},
	} {
		if got := constant(t, c.file, c.name); got != c.want {
			t.Errorf("%s: %s is %v, this package has %v", c.file, c.name, got, c.want)
		}
	}
	for _, c := range []struct{ file, code, what string }{
		{"tester/probe.go", "p.collect(from, from+uint64(sent), 500*time.Millisecond)", "loadedReplyWait"},
		{"tester/pmtu.go", "p.burst(ctx, 5, 20*time.Millisecond)", "pmtuIdleProbes, pmtuIdleGap"},
		{"tester/pmtu.go", "res.Timeout = 100 * time.Millisecond", "pmtuMinTimeout"},
		{"tester/pmtu.go", "res.Timeout = max(res.Timeout, 4*r)", "pmtuTimeoutRTTs"},
		{"tester/sweep.go", "res, terr := RunTCP(ctx, t, cfg.TCP, nil)", "a window point's TCP test, a session of its own"},
		{"method/rfc6349.go", "r.net.PMTU(r.ctx, result.PMTUConfig{})", "step 1 at the defaults"},
		{"method/rfc6349.go", "for range 2 {\n\t\trt, err := r.net.RTT(r.ctx, result.RTTConfig{Count: 20, Interval: 20 * time.Millisecond, Size: 64}, nil)", "baselineSeries, baselineProbes, baselineProbeGap"},
		{"method/rfc6349.go", "for try := 0; try < 2; try++ {", "bbTries"},
		{"method/rfc6349.go", "Duration: 2 * time.Second,", "bbStream"},
		{"method/rfc6349.go", "Interval: time.Second, Drain: 300 * time.Millisecond}", "bbDrain"},
		{"method/rfc6349.go", "quarter, qgot, err := udp(cir / 4)", "the stream at a quarter of the CIR before the search"},
		{"method/rfc6349.go", "for _, st := range rfc6349.Walk(", "one TCP test per walk step"},
		{"method/rfc6349.go", "BaselineProbes: 10,", "sweepPointProbe"},
		{"method/rfc6349.go", `return r.tcp(dir, conns, 0, r.cfg.StepDuration, "reno")`, "shapingTries"},
		{"method/trains.go", "overhead := frame.IPv4UDP + r.link.Overhead", "trainIPHeaders"},
		{"method/trains.go", "size := r.mtu[dir] - frame.IPv4UDP", "trainIPHeaders"},
		{"method/trains.go", "small > 0 && small < 8 && size > train.MinPacket", "trainSmallHead"},
		{"method/trains.go", "size = max(train.MinPacket, train.PacketSize(float64(small*(size+overhead)))-overhead)", "the second series' sizes"},
		{"method/trains.go", "sender := 4 * max(bb, float64(r.cfg.CIRBps))", "trainPace"},
		{"method/trains.go", "for n := 16; ; n *= 2 {\n\t\tlongest := max(2, train.Longest(bb, bdp, sender, per)/per)\n\t\tn = min(n, longest)", "trainFirst, the longest train"},
		{"method/trains.go", "drain := 2*r.baseline + time.Duration(float64(n*per)*8/bb*1e9) + 250*time.Millisecond", "trainRefill"},
		{"method/trains.go", "if train.Enough(rs, trainNoise) || n >= longest {", "the series' end"},
	} {
		if !strings.Contains(source(t, c.file), c.code) {
			t.Errorf("%s no longer has %q (%s)", c.file, c.code, c.what)
		}
	}
	if got, want := body(t, "method/validate.go", "point"), body(t, "schedule/method.go", "sweepPoint"); got != want {
		t.Errorf("method.point is now\n%s\nsweepPoint has\n%s", got, want)
	}
}

// source is the text of a file under internal.
func source(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func parse(t *testing.T, file string) *ast.File {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, source(t, file), 0)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// constant is the value of a duration constant of a file under internal,
// written as N, N * time.Unit or a sum of them.
func constant(t *testing.T, file, name string) time.Duration {
	t.Helper()
	for _, d := range parse(t, file).Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if n.Name == name && i < len(vs.Values) {
					return eval(t, vs.Values[i])
				}
			}
		}
	}
	t.Fatalf("%s has no constant %s", file, name)
	return 0
}

func eval(t *testing.T, e ast.Expr) time.Duration {
	t.Helper()
	units := map[string]time.Duration{"Nanosecond": time.Nanosecond, "Microsecond": time.Microsecond, "Millisecond": time.Millisecond,
		"Second": time.Second, "Minute": time.Minute, "Hour": time.Hour}
	switch e := e.(type) {
	case *ast.BasicLit:
		n, err := strconv.ParseInt(e.Value, 0, 64)
		if err == nil {
			return time.Duration(n)
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && x.Name == "time" && units[e.Sel.Name] > 0 {
			return units[e.Sel.Name]
		}
	case *ast.ParenExpr:
		return eval(t, e.X)
	case *ast.BinaryExpr:
		switch e.Op {
		case token.MUL:
			return eval(t, e.X) * eval(t, e.Y)
		case token.ADD:
			return eval(t, e.X) + eval(t, e.Y)
		}
	}
	t.Fatalf("cannot evaluate %T %v", e, e)
	return 0
}

// body is the printed body of function fn of a file under internal.
func body(t *testing.T, file, fn string) string {
	t.Helper()
	for _, d := range parse(t, file).Decls {
		if f, ok := d.(*ast.FuncDecl); ok && f.Name.Name == fn {
			var b bytes.Buffer
			if err := printer.Fprint(&b, token.NewFileSet(), f.Body); err != nil {
				t.Fatal(err)
			}
			return b.String()
		}
	}
	t.Fatalf("%s has no func %s", file, fn)
	return ""
}
