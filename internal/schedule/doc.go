// Package schedule is the fleet's timetable, as pure functions: when a
// repeating test runs next (Repeat: ISO 8601 repeating intervals or
// cron), a random slip of its start, the pairs a group test runs between
// (Pairs), how long a test runs and the slot it must book, and whether
// it needs the path to itself (a Costing per kind, which the table of
// kinds, package kinds, makes with Costed of each kind's own cost and
// asks by name; the Cost arithmetic the engine and the methods add up
// their tests with), and a calendar of booked intervals to find the
// first free one in (FirstFree). It knows no kind: the engine (package
// tester) says what each of its tests costs, and each method (package
// method) its plan, beside the code they bound.
//
// Nothing here reads a clock, a socket or a database: every time is
// passed in, and randomness comes from the caller's *rand.Rand. The
// controller books slots in its store (atomically, in a transaction);
// this package only says which slot to ask for.
package schedule
