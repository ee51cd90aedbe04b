package wire

import (
	"bufio"
	"bytes"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the frame decoder and then to every
// body type, and validates a decoded request against decoded limits:
// nothing may panic, and a frame that decodes must re-encode.
func FuzzDecode(f *testing.F) {
	for _, seed := range [][]byte{
		[]byte("\x00\x00\x00\x10{\"type\":\"start\"}"),
		[]byte("\x00\x00\x00\x2d{\"type\":\"request\",\"body\":{\"kind\":\"tcp\"}}"),
		[]byte("\xff\xff\xff\xff"),
		[]byte("\x00\x00\x00\x5f{\"type\":\"hello\",\"body\":{\"version\":3,\"limits\":{\"max_streams\":2,\"allow_cc\":[],\"allow_dscp\":[0]}}}"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		var req Request
		_ = m.Into(TypeRequest, &req)
		var hello Hello
		_ = m.Into(TypeHello, &hello)
		_ = req.Validate(hello.Announced()) // both ends validate what they decoded
		_ = req.Validate(FormOnly())
		var iv Interval
		_ = m.Into(TypeInterval, &iv)
		var res Result
		_ = m.Into(TypeResult, &res)
		var dh DataHello
		_ = m.Into(TypeAuth, &dh)
		var buf bytes.Buffer
		if err := Encode(&buf, m.Type, m.Body); err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		_, _ = ParseUDP(data)
	})
}
