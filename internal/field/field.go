// Package field is the error of an input refused for one of its fields,
// named by its JSON path, so that a form can show the message beside the
// field and the command line beside the flag that sets it. It is a leaf
// (no fullpipe imports) because both ends of the fleet's contract speak
// it: a kind's config refuses a value (result.FieldError) and a
// schedule's checks refuse theirs (fleet.FieldError), and they are one
// type, so a caller asks errors.As once whichever refused.
package field

// Error is a value refused: Field is its JSON path ("duration_ns",
// "services[1]", "test.config.trial_ns", "thresholds.max_rtt_ms"), Msg
// what is wrong and what is wanted.
type Error struct {
	Field string
	Msg   string
}

func (e *Error) Error() string { return e.Field + ": " + e.Msg }
