package tester

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fullpipe/fullpipe/internal/result"
)

// An agent reads a scheduled test's STAMP key only from its own key
// directory, by name, from a regular file of at most MaxSTAMPKeyBytes
// (issue 22: key_file /dev/zero ran an agent out of memory).
func TestResolveSTAMPKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("good", []byte(strings.Repeat("k", 32)+"\n"))
	write("big", make([]byte, MaxSTAMPKeyBytes+1))
	write("short", []byte("0123456789"))
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  result.STAMPConfig
		dir  string
		want string // in the error; "" accepted
	}{
		{"a key in the dir", result.STAMPConfig{Key: "good"}, dir, ""},
		{"no key", result.STAMPConfig{}, dir, ""},
		{"no key dir", result.STAMPConfig{Key: "good"}, "", "--stamp-key-dir"},
		{"key_file", result.STAMPConfig{KeyFile: filepath.Join(dir, "good")}, dir, "key_file is refused"},
		{"a path", result.STAMPConfig{Key: "/etc/passwd"}, dir, "never a path"},
		{"up a dir", result.STAMPConfig{Key: "../good"}, dir, "never a path"},
		{"over the cap", result.STAMPConfig{Key: "big"}, dir, "more than 1024 bytes"},
		{"a link to /dev/zero", result.STAMPConfig{Key: "zero"}, dir, "not a regular file"},
		{"a FIFO (opening would wait)", result.STAMPConfig{Key: "fifo"}, dir, "not a regular file"},
		{"a directory", result.STAMPConfig{Key: "sub"}, dir, "not a regular file"},
		{"too short", result.STAMPConfig{Key: "short"}, dir, "fewer than 16"},
		{"missing", result.STAMPConfig{Key: "absent"}, dir, "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ResolveSTAMPKey(c.cfg, c.dir)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want == "" && c.cfg.Key != "" && got.KeyFile != filepath.Join(dir, c.cfg.Key):
				t.Errorf("key file %q, want the name in the dir", got.KeyFile)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// The CLI's --key-file gets the same cap: /dev/zero is refused, not read.
func TestReadSTAMPKeyDevZero(t *testing.T) {
	if _, err := ReadSTAMPKey("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("/dev/zero: %v", err)
	}
}
