package fleet

import (
	"encoding/json"
	"strconv"
)

// UnmarshalJSON reads Figures as the store keeps them (encoding/json's
// compact output: a flat object of known keys, numbers, two strings
// without escapes and one bool) without reflection, about five times
// faster: a year of hourly results for ten pairs is 87,600 of them to
// decode for one chart page. Anything else (spaces, escapes, unknown
// keys, null) is read by encoding/json, so the result is always what it
// would give.
func (f *Figures) UnmarshalJSON(b []byte) error {
	var fast Figures
	if fast.scan(b) {
		*f = fast
		return nil
	}
	type plain Figures // without this method
	p := plain(*f)
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*f = Figures(p)
	return nil
}

// scan reads b on the fast path; false when b is not of its shape.
func (f *Figures) scan(b []byte) bool {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return false
	}
	i := 1
	if b[i] == '}' {
		return i == len(b)-1
	}
	for {
		key, j, ok := plainString(b, i)
		if !ok || j >= len(b) || b[j] != ':' {
			return false
		}
		if i, ok = f.value(key, b, j+1); !ok || i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i++
		case '}':
			return i == len(b)-1
		default:
			return false
		}
	}
}

// plainString reads a string without escapes at b[i]; it returns its
// content and the index after its closing quote.
func plainString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", i, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return string(b[i+1 : j]), j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80: // escapes, controls and non-ASCII (encoding/json mends bad UTF-8): the slow path
			return "", i, false
		}
	}
	return "", i, false
}

// value reads key's value at b[i] into f; it returns the index after it.
func (f *Figures) value(key string, b []byte, i int) (int, bool) {
	switch key {
	case "verdict":
		s, j, ok := plainString(b, i)
		f.Verdict = s
		return j, ok
	case "implausible":
		s, j, ok := plainString(b, i)
		f.Implausible = s
		return j, ok
	case "partial":
		switch {
		case len(b) >= i+4 && string(b[i:i+4]) == "true":
			f.Partial = true
			return i + 4, true
		case len(b) >= i+5 && string(b[i:i+5]) == "false":
			f.Partial = false
			return i + 5, true
		}
		return i, false
	}
	dst := f.number(key)
	if dst == nil {
		return i, false
	}
	j := i
	for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
		j++
	}
	if j == i || !jsonNumber(b[i:j]) {
		return i, false
	}
	v, err := strconv.ParseFloat(string(b[i:j]), 64)
	*dst = v
	return j, err == nil
}

// jsonNumber says whether n is a number as JSON writes it (strconv
// takes more: "+1", ".5", "1.", "01").
func jsonNumber(n []byte) bool {
	i := 0
	if n[i] == '-' {
		i++
	}
	switch {
	case i < len(n) && n[i] == '0':
		i++
	case i < len(n) && n[i] >= '1' && n[i] <= '9':
		for i < len(n) && n[i] >= '0' && n[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(n) && n[i] == '.' {
		i++
		if i == len(n) || n[i] < '0' || n[i] > '9' {
			return false
		}
		for i < len(n) && n[i] >= '0' && n[i] <= '9' {
			i++
		}
	}
	if i < len(n) && (n[i] == 'e' || n[i] == 'E') {
		i++
		if i < len(n) && (n[i] == '+' || n[i] == '-') {
			i++
		}
		if i == len(n) || n[i] < '0' || n[i] > '9' {
			return false
		}
		for i < len(n) && n[i] >= '0' && n[i] <= '9' {
			i++
		}
	}
	return i == len(n)
}

// number is the field a numeric key names; nil when none.
func (f *Figures) number(key string) *float64 {
	switch key {
	case "throughput_bps":
		return &f.ThroughputBps
	case "ideal_bps":
		return &f.IdealBps
	case "rtt_ms":
		return &f.RTTMs
	case "rtt_loaded_ms":
		return &f.RTTLoadedMs
	case "loss_pct":
		return &f.LossPct
	case "buffer_delay_pct":
		return &f.BufferDelayPct
	case "down_throughput_bps":
		return &f.DownThroughputBps
	case "down_ideal_bps":
		return &f.DownIdealBps
	case "down_rtt_loaded_ms":
		return &f.DownRTTLoadedMs
	case "down_loss_pct":
		return &f.DownLossPct
	case "down_buffer_delay_pct":
		return &f.DownBufferDelayPct
	}
	return nil
}
