// Package fleettest builds what hostile agents send a controller, for
// the controller's tests and bench/soak.sh's fleet part.
package fleettest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fullpipe/fullpipe/internal/fleet"
)

// LineEvents is n progress events numbered from from, at at.
func LineEvents(at time.Time, from, n int) []fleet.Event {
	es := make([]fleet.Event, n)
	for i := range es {
		es[i] = fleet.Event{Seq: from + i, Time: at, Event: json.RawMessage(fmt.Sprintf(`{"kind":"line","text":"%d"}`, from+i))}
	}
	return es
}

// EmptyStreams is a tcp document of about size bytes of empty streams
// (issue 22's 15 MiB took a controller from 26 MiB to 3.9 GiB).
func EmptyStreams(size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"schema":1,"test":"tcp","summary":{"streams":[`)
	for b.Len() < size {
		b.WriteString("{},")
	}
	b.WriteString("{}]}}")
	return b.Bytes()
}
