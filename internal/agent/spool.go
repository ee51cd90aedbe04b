package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// Defaults of the spool's bounds.
const (
	DefaultMaxSpoolFiles = 10_000
	DefaultMaxSpoolBytes = 1 << 30
	// maxAside bounds the files moved aside (refused uploads, unreadable
	// files): past it the oldest are deleted.
	maxAside = 1000
	// maxEntryBytes bounds one spooled upload as read back.
	maxEntryBytes = 256 << 20
)

// entry is one spooled upload: a finished run's document or error,
// kept until the controller acknowledges it.
type entry struct {
	RunID   string       `json:"run_id"`
	Spooled time.Time    `json:"spooled"`
	Upload  fleet.Upload `json:"upload"`
}

// spool is the directory of uploads not yet acknowledged. Each is
// written whole before its upload is tried (temp file, fsync, rename,
// fsync of the directory), so a crash at any moment leaves either no
// file or the whole one; it is deleted only once the controller has
// acknowledged it. Refused ones are moved aside to a directory beside.
// Its methods are safe for concurrent use.
type spool struct {
	dir, aside         string
	maxFiles, maxBytes int64

	mu    sync.Mutex // guards files and bytes, the spool's usage
	files int64
	bytes int64
}

const tmpPrefix = ".tmp-"

// openSpool opens (creating) dir/spool and dir/rejected, deletes the
// temp files a crash left and counts what is spooled.
func openSpool(dir string, maxFiles, maxBytes int64) (*spool, error) {
	s := &spool{dir: filepath.Join(dir, "spool"), aside: filepath.Join(dir, "rejected"), maxFiles: maxFiles, maxBytes: maxBytes}
	for _, d := range []string{s.dir, s.aside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
	}
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			_ = os.Remove(filepath.Join(s.dir, e.Name())) // a write the crash cut short: its run was never acknowledged as spooled
			continue
		}
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			s.files++
			s.bytes += info.Size()
		}
	}
	return s, nil
}

var safeName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// fileName is run id's file: the id itself when it is a safe file name,
// else a hash of it (the file holds the id either way).
func fileName(id string) string {
	if safeName.MatchString(id) && !strings.HasSuffix(id, ".json") {
		return id + ".json"
	}
	h := sha256.Sum256([]byte(id))
	return "x-" + hex.EncodeToString(h[:16]) + ".json"
}

// SpoolFile is where an agent started with --spool-dir dir keeps run
// id's upload once it is durable (put has renamed it into place): a
// watcher that sees this file knows the result survives a crash, which
// the spool's temporary files do not promise.
func SpoolFile(dir, id string) string {
	return filepath.Join(dir, "spool", fileName(id))
}

// usage is what the spool holds.
func (s *spool) usage() (files, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.files, s.bytes
}

// full says why the spool takes no more runs, or "".
func (s *spool) full() string {
	files, bytes := s.usage()
	switch {
	case files >= s.maxFiles:
		return fmt.Sprintf("the spool holds %d uploads, its maximum: the controller has not acknowledged them", files)
	case bytes >= s.maxBytes:
		return fmt.Sprintf("the spool holds %d bytes, past its maximum of %d: the controller has not acknowledged them", bytes, s.maxBytes)
	}
	return ""
}

// has reports whether run id's upload is spooled.
func (s *spool) has(id string) bool {
	_, err := os.Stat(filepath.Join(s.dir, fileName(id)))
	return err == nil
}

// put writes run id's upload durably: once it returns nil the upload
// survives a crash or a power cut.
func (s *spool) put(id string, u fleet.Upload, now time.Time) error {
	b, err := json.Marshal(entry{RunID: id, Spooled: now.UTC(), Upload: u})
	if err != nil {
		return fmt.Errorf("spool run %s: %w", id, err)
	}
	f, err := os.CreateTemp(s.dir, tmpPrefix)
	if err != nil {
		return fmt.Errorf("spool run %s: %w", id, err)
	}
	defer os.Remove(f.Name()) // gone after the rename; there on failure
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	final := filepath.Join(s.dir, fileName(id))
	old, statErr := os.Stat(final)
	if err == nil {
		err = os.Rename(f.Name(), final)
	}
	if err == nil {
		err = syncDir(s.dir)
	}
	if err != nil {
		return fmt.Errorf("spool run %s: %w", id, err)
	}
	if statErr != nil { // a new file
		s.count(1, int64(len(b)))
	} else { // a rewrite of one
		s.count(0, int64(len(b))-old.Size())
	}
	return nil
}

// syncDir makes a directory's entries (a rename, a removal) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (s *spool) count(files, bytes int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files += files
	s.bytes += bytes
}

// list returns the spooled files' names, oldest first (by modification
// time, then name).
func (s *spool) list() ([]string, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	type named struct {
		name string
		mod  time.Time
	}
	var fs []named
	for _, e := range ents {
		info, err := e.Info()
		if err != nil || strings.HasPrefix(e.Name(), tmpPrefix) || !info.Mode().IsRegular() {
			continue
		}
		fs = append(fs, named{e.Name(), info.ModTime()})
	}
	slices.SortFunc(fs, func(a, b named) int {
		if c := a.mod.Compare(b.mod); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.name
	}
	return names, nil
}

// read reads a spooled file.
func (s *spool) read(name string) (entry, error) {
	var e entry
	p := filepath.Join(s.dir, name)
	info, err := os.Stat(p)
	if err != nil {
		return e, err
	}
	if info.Size() > maxEntryBytes {
		return e, fmt.Errorf("spool file %s is %d bytes, past %d", name, info.Size(), maxEntryBytes)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal(b, &e); err != nil || e.RunID == "" {
		return e, errors.Join(fmt.Errorf("spool file %s is not a spooled upload", name), err)
	}
	return e, nil
}

// remove deletes an acknowledged upload.
func (s *spool) remove(name string) error {
	p := filepath.Join(s.dir, name)
	info, err := os.Stat(p)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil {
		return err
	}
	s.count(-1, -info.Size())
	return syncDir(s.dir)
}

// moveAside moves a refused or unreadable file to the rejected
// directory (stamped, so that it never overwrites an earlier one) and
// deletes the oldest there past maxAside. It returns the new path.
func (s *spool) moveAside(name string, now time.Time) (string, error) {
	p := filepath.Join(s.dir, name)
	info, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	to := filepath.Join(s.aside, now.UTC().Format("20060102T150405.000000000Z")+"-"+name)
	if err := os.Rename(p, to); err != nil {
		return "", err
	}
	s.count(-1, -info.Size())
	err = errors.Join(syncDir(s.dir), syncDir(s.aside), s.pruneAside())
	return to, err
}

// pruneAside deletes the oldest files aside past maxAside (their names
// start with the time they were moved).
func (s *spool) pruneAside() error {
	ents, err := os.ReadDir(s.aside)
	if err != nil || len(ents) <= maxAside {
		return err
	}
	for _, e := range ents[:len(ents)-maxAside] { // ReadDir sorts by name: oldest first
		if err := os.Remove(filepath.Join(s.aside, e.Name())); err != nil {
			return err
		}
	}
	return nil
}
