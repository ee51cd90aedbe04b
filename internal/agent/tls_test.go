package agent

import (
	"strings"
	"testing"
)

// TestResponderPinKept: the responder's self-signed certificate is kept
// in the state dir, so its pin survives a restart; the pin parses back
// in both spellings.
func TestResponderPinKept(t *testing.T) {
	dir := t.TempDir()
	var pins []string
	for range 2 {
		a, err := New(Config{Controller: &recorder{}, Name: "a", SpoolDir: dir, TLS: true, Listen: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		pins = append(pins, a.Pin())
		a.Close()
	}
	if len(pins[0]) != 64 || pins[0] != pins[1] {
		t.Errorf("pins %v: want one 64-digit hex pin, kept across restarts", pins)
	}
	for _, s := range []string{pins[0], "sha256:" + strings.ToUpper(pins[0])} {
		if b, err := parsePin(s); err != nil || len(b) != 32 {
			t.Errorf("parsePin(%q) = %x, %v", s, b, err)
		}
	}
	if _, err := parsePin("sha256:12"); err == nil {
		t.Error("took a short pin")
	}
}

// TestConfigRefused: what New refuses, each with its reason.
func TestConfigRefused(t *testing.T) {
	ctl := &recorder{} // never called: New does not call the controller
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no controller", Config{Name: "a", SpoolDir: t.TempDir()}, "no controller"},
		{"no name", Config{Controller: ctl, SpoolDir: t.TempDir()}, "no name"},
		{"no spool", Config{Controller: ctl, Name: "a"}, "no spool"},
		{"no address to dial", Config{Controller: ctl, Name: "a", SpoolDir: t.TempDir(), Listen: ":0"}, "give Addresses"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := New(c.cfg)
			if err == nil {
				a.Close()
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %q, want %q", err, c.want)
			}
		})
	}
}
