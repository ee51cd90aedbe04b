// Package doctest checks every document the fullpipe binary emits against
// its JSON Schema in docs/schema: its test builds the binary, starts
// `fullpipe serve` on loopback and validates the --json output of each
// command (rfc6349's, which needs a lab, is validated by the lab's tests).
// It has no code of its own.
package doctest
