package lease

import (
	"encoding"
	"strconv"
)

var (
	_ encoding.TextMarshaler   = State(0)
	_ encoding.TextUnmarshaler = (*State)(nil)
)

// State is the state of a lease. The zero value, StateUnknown, is not a legal
// state: a lease read back in it fails Check.
type State uint8

// The states of docs/FORMATS.md#lease. ACTIVE and CLAIMED are live; CONSUMED, EXPIRED and
// REVOKED are terminal, and every terminal state requires the destruction of
// the lease's data key.
const (
	StateUnknown State = iota
	Active
	Claimed
	Consumed
	Expired
	Revoked
)

var stateNames = [...]string{
	Active:   "ACTIVE",
	Claimed:  "CLAIMED",
	Consumed: "CONSUMED",
	Expired:  "EXPIRED",
	Revoked:  "REVOKED",
}

// States returns every legal state, in the order of docs/FORMATS.md#codes.
func States() []State { return []State{Active, Claimed, Consumed, Expired, Revoked} }

// Valid reports whether s is one of the five legal states.
func (s State) Valid() bool { return s >= Active && s <= Revoked }

// Terminal reports whether s is CONSUMED, EXPIRED or REVOKED. No event leaves
// a terminal state.
func (s State) Terminal() bool { return s == Consumed || s == Expired || s == Revoked }

// String returns the wire name of s ("ACTIVE", …). An illegal value prints as
// "UNKNOWN" or "State(n)"; it is never a wire name.
func (s State) String() string {
	switch {
	case s.Valid():
		return stateNames[s]
	case s == StateUnknown:
		return "UNKNOWN"
	default:
		return "State(" + strconv.Itoa(int(s)) + ")"
	}
}

// ParseState parses a wire name. It is exact: no case folding, no spaces.
func ParseState(name string) (State, error) {
	for _, s := range States() {
		if stateNames[s] == name {
			return s, nil
		}
	}
	return StateUnknown, &Error{Op: "parse-state", Field: "state", Err: ErrInvalid}
}

// MarshalText encodes a legal state as its wire name and refuses any other
// value, so an illegal state is never written.
func (s State) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, &Error{Op: "marshal-state", Field: "state", Err: ErrInvalid}
	}
	return []byte(stateNames[s]), nil
}

// UnmarshalText decodes a wire name with ParseState.
func (s *State) UnmarshalText(b []byte) error {
	v, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Event is an input of the state machine. Bind and DestroyKey are not events:
// they never change State.
type Event uint8

// The events. The zero value is not an event.
const (
	EventUnknown Event = iota
	EventClaim
	EventConsume
	EventRevoke
	EventExpire
)

var eventNames = [...]string{
	EventClaim:   "claim",
	EventConsume: "consume",
	EventRevoke:  "revoke",
	EventExpire:  "expire",
}

// Events returns every event.
func Events() []Event { return []Event{EventClaim, EventConsume, EventRevoke, EventExpire} }

// Valid reports whether e is one of the four events.
func (e Event) Valid() bool { return e >= EventClaim && e <= EventExpire }

// String returns the event's name, which is also the Op of its errors.
func (e Event) String() string {
	if e.Valid() {
		return eventNames[e]
	}
	return "Event(" + strconv.Itoa(int(e)) + ")"
}

// Next is the state-level transition table: the state that event ev moves s
// to, and whether the move is legal at all. It knows nothing of claim tuples,
// bindings or time; the Lease methods add those rules on top of it. A claim of
// a CLAIMED lease is legal here (it is the idempotent repeat) and leaves it
// CLAIMED.
func Next(s State, ev Event) (State, bool) {
	switch s {
	case Active:
		switch ev {
		case EventClaim:
			return Claimed, true
		case EventRevoke:
			return Revoked, true
		case EventExpire:
			return Expired, true
		}
	case Claimed:
		switch ev {
		case EventClaim:
			return Claimed, true
		case EventConsume:
			return Consumed, true
		case EventRevoke:
			return Revoked, true
		case EventExpire:
			return Expired, true
		}
	}
	return s, false
}

// reachable reports whether a lease in state from can later be observed in
// state to (including from == to): the order that Forward enforces.
func reachable(from, to State) bool {
	if !from.Valid() || !to.Valid() {
		return false
	}
	if from == to {
		return true
	}
	for _, ev := range Events() {
		if n, ok := Next(from, ev); ok && n != from && reachable(n, to) {
			return true
		}
	}
	return false
}

// Outcome says what a successful Claim did.
type Outcome uint8

// Outcomes of Claim. OutcomeNone accompanies every error.
const (
	OutcomeNone Outcome = iota
	OutcomeClaimed
	OutcomeAlreadyClaimed
)

// String returns "none", "claimed" or "already-claimed".
func (o Outcome) String() string {
	switch o {
	case OutcomeNone:
		return "none"
	case OutcomeClaimed:
		return "claimed"
	case OutcomeAlreadyClaimed:
		return "already-claimed"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}
