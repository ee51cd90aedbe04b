package result

import (
	"fmt"

	"github.com/fullpipe/fullpipe/internal/field"
)

// FieldError is a config value its kind refuses. Field names it as the
// config's JSON does ("duration_ns"; inside a list or a nested config
// with the parent's name: "services[1]", "shaping_connections"), Msg
// says what is wrong and what is wanted. A form shows it beside the
// field (a schedule's prefixes "test.config."; fleet.FieldError is this
// type, package field's Error, which the fleet's contract shares),
// the CLI beside the flag that sets it. Every Validate of a kind's
// config returns one, except for a request's own rules (the wire's
// limits), which name the request's.
type FieldError = field.Error

// fieldErr is a *FieldError for field, its reason formatted.
func fieldErr(field, format string, a ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// within is err from the config value at parent: a nested config's
// *FieldError gets parent's name before its own; any other error, one
// that wraps a *FieldError with words of its own among them ("service
// "voice", step 150 %: ..."), becomes one naming parent, its words
// kept. nil stays nil.
func within(parent string, err error) error {
	if err == nil {
		return nil
	}
	if fe, ok := err.(*FieldError); ok {
		return &FieldError{Field: parent + "." + fe.Field, Msg: fe.Msg}
	}
	return &FieldError{Field: parent, Msg: err.Error()}
}
