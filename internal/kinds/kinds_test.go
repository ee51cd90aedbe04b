package kinds

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
	"github.com/fullpipe/fullpipe/internal/method"
	"github.com/fullpipe/fullpipe/internal/method/fakenet"
	"github.com/fullpipe/fullpipe/internal/result"
	"github.com/fullpipe/fullpipe/internal/result/resulttest"
)

// TestEveryKind walks the table and checks each row end to end: its
// test data validates against its schema and decodes to its document;
// its config goes through a schedule's decoding and comes back the same
// from JSON; its document renders as text and as HTML; a schedule can
// book it (a slot at least its length); and it runs on the fake network
// from that config, giving its own kind of document; it has headline
// figures (all but mtu, whose MTU is no figure of the store). A kind that lacks
// any column fails here, not in a user's hands.
func TestEveryKind(t *testing.T) {
	docs := result.Kinds()
	if len(All()) != len(docs) {
		t.Fatalf("%d rows for %d documents", len(All()), len(docs))
	}
	for i, k := range All() {
		if k.File != docs[i].File || k.New == nil || k.Config == nil {
			t.Fatalf("row %d is %q (document %v, config %v): want %q's, in result.Kinds' order", i, k.File, k.New != nil, k.Config != nil, docs[i].File)
		}
		t.Run(k.File, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("..", "result", "testdata", k.File+".json"))
			if err != nil {
				t.Fatal(err)
			}
			resulttest.Validate(t, raw)
			doc, err := result.Decode(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			if of, ok := Of(doc); !ok || of.File != k.File || doc.Head().Test != k.Test {
				t.Fatalf("test data decodes to %T (test %q), kind %q: want %T, %q", doc, doc.Head().Test, of.File, k.New(), k.Test)
			}
			cfgRaw := configOf(t, raw)
			cfg := roundTrip(t, k, cfgRaw)
			renders(t, doc)
			f := Figures(doc) // a row whose figures take another kind's document panics here
			if (k.figures == nil) != (k.File == "mtu") {
				t.Errorf("figures column %v: want one for every kind but mtu (figures %+v)", k.figures != nil, f)
			}
			books(t, k, cfgRaw)
			runs(t, k, cfg)
		})
	}
}

// configOf is a document's "config" key.
func configOf(t *testing.T, doc []byte) json.RawMessage {
	t.Helper()
	var d struct {
		Config json.RawMessage `json:"config"`
	}
	if err := json.Unmarshal(doc, &d); err != nil || len(d.Config) == 0 {
		t.Fatalf("no config in the test data (%v)", err)
	}
	return d.Config
}

// roundTrip decodes a config as a schedule does (defaults, Validate),
// marshals what came out, decodes that again and wants the same value.
func roundTrip(t *testing.T, k Kind, raw json.RawMessage) any {
	t.Helper()
	cfg, err := Decode(fleet.Test{Kind: k.File, Config: raw})
	if err != nil {
		t.Fatalf("a schedule's decoding: %v", err)
	}
	again, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg2, err := Decode(fleet.Test{Kind: k.File, Config: again})
	if err != nil || !reflect.DeepEqual(cfg, cfg2) {
		t.Errorf("config round trip: %+v, then %+v (%v)", cfg, cfg2, err)
	}
	return cfg
}

func renders(t *testing.T, doc result.Doc) {
	t.Helper()
	var text bytes.Buffer
	if err := Text(&text, doc); err != nil || text.Len() == 0 {
		t.Errorf("text: %d bytes, %v", text.Len(), err)
	}
	if page, err := HTML(doc); err != nil || !bytes.Contains(page, []byte("</html>")) {
		t.Errorf("HTML: %d bytes, %v", len(page), err)
	}
}

// books asks the scheduler for the config's length and its slot on a
// path of 50 ms.
func books(t *testing.T, k Kind, raw json.RawMessage) {
	t.Helper()
	length, err := Length(k.File, raw)
	if err != nil || length <= 0 {
		t.Fatalf("length %v, %v", length, err)
	}
	slot, err := SlotFor(k.File, raw, 50*time.Millisecond)
	if err != nil || slot < length {
		t.Errorf("slot %v (%v) for a length of %v", slot, err, length)
	}
}

// runs executes the config with the row's own runner on a clean fake path (100 Mbit/s, 20 ms, a
// BDP of queue) and wants the kind's document back, bracketed by events.
func runs(t *testing.T, k Kind, cfg any) {
	t.Helper()
	p := &fakenet.Path{BaseRTT: 20 * time.Millisecond, RateBps: 100e6, QueueBytes: 250_000}
	if !k.run.Takes(cfg) {
		t.Fatalf("the row's runner does not take its own config, a %T", cfg)
	}
	events := 0
	d, err := k.run.Run(context.Background(), p, cfg, func(method.Event) { events++ })
	if err != nil {
		t.Fatalf("run on the fake network: %v", err)
	}
	if of, ok := Of(d); !ok || of.File != k.File || d.Head().Test != k.Test {
		t.Errorf("ran to %T (test %q): want %T, %q", d, d.Head().Test, k.New(), k.Test)
	}
	if events < 2 {
		t.Errorf("%d events: want at least a start and a finish", events)
	}
}

// TestNamedOf: a row is found by its schedule name and by its document;
// an unknown name or document finds none.
func TestNamedOf(t *testing.T) {
	k, ok := Named("sweep-window")
	if !ok || k.Test != "sweep window" {
		t.Errorf("Named(sweep-window) = %+v, %v", k, ok)
	}
	if _, ok := Named("sweep window"); ok {
		t.Error("a Meta.Test spelling found a row by name")
	}
	if k, ok := Of(new(result.Y1564)); !ok || k.File != "y1564" {
		t.Errorf("Of(*Y1564) = %+v, %v", k, ok)
	}
	if _, ok := Of(nil); ok {
		t.Error("a nil document has a kind")
	}
}
