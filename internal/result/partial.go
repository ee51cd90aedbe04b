package result

import "errors"

// ErrPartial marks a result that stopped before its end (Ctrl-C, a peer
// that died); the document returned with it holds what was measured,
// marked partial.
var ErrPartial = errors.New("test stopped early; figures are partial")
