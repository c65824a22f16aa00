package canon

import "strconv"

// Kind is the type of a parsed JSON value.
type Kind uint8

// The JSON value kinds. The zero Kind is Null, so the zero Value is a JSON null.
const (
	Null Kind = iota
	Bool
	Number
	String
	Array
	Object
)

var kindNames = [...]string{"null", "bool", "number", "string", "array", "object"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is a parsed JSON value. Members keep document order.
//
// Only the fields that belong to Kind are set: Bool for Bool, Num for Number,
// Str for String, Elems for Array, Members for Object. Off and End locate the
// value in the document it was parsed from: data[Off:End] is its exact text.
//
// A tree returned by [Parse] satisfies every rule of the strict grammar: Str and
// every Member.Key are valid UTF-8, Num is a valid JSON number literal and no
// object has two members with the same key. [Value.Canonical] checks these
// rules again, so a hand-built or modified tree cannot produce invalid output.
type Value struct {
	Kind    Kind
	Bool    bool
	Num     string // the number literal exactly as written
	Str     []byte // decoded UTF-8 bytes of a string (escapes resolved)
	Elems   []Value
	Members []Member
	Off     int // byte offset of the value's first byte in the document
	End     int // byte offset just past the value
}

// Member is one member of a JSON object.
type Member struct {
	Key    []byte // decoded UTF-8 bytes of the key (escapes resolved)
	KeyOff int    // byte offset of the key's opening quote in the document
	Value  Value
}

// The default limits applied when an Options field is zero.
const (
	// DefaultMaxBytes is the largest document Parse accepts by default (1 GiB).
	DefaultMaxBytes = 1 << 30
	// DefaultMaxDepth is the deepest nesting of arrays and objects Parse
	// accepts by default. A scalar document has depth 0, "[]" has depth 1.
	DefaultMaxDepth = 64
)

// Options bound the work Parse and Unmarshal do. A zero or negative field
// selects its default. MaxDepth is capped at 10000 whatever its value, so
// that recursion stays far from the goroutine stack limit.
type Options struct {
	MaxBytes int64 // largest accepted document in bytes; 0 → DefaultMaxBytes
	MaxDepth int   // deepest accepted nesting; 0 → DefaultMaxDepth

	// Buffer, when set, returns the buffers of at least n bytes (n ≥
	// 64 KiB) that Parse decodes a large document's strings into; the
	// tree then shares their memory, and the caller decides how long
	// they live. Smaller ones, and all of Unmarshal's, come from the heap.
	Buffer func(n int) []byte
}

func (o Options) limits() (maxBytes int64, maxDepth int) {
	maxBytes, maxDepth = o.MaxBytes, o.MaxDepth
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	return maxBytes, min(maxDepth, hardMaxDepth)
}

// clone returns a deep copy of v that shares no memory with v.
func (v *Value) clone() Value {
	c := *v
	if v.Str != nil {
		c.Str = append([]byte(nil), v.Str...)
	}
	if v.Elems != nil {
		c.Elems = make([]Value, len(v.Elems))
		for i := range v.Elems {
			c.Elems[i] = v.Elems[i].clone()
		}
	}
	if v.Members != nil {
		c.Members = make([]Member, len(v.Members))
		for i := range v.Members {
			m := &v.Members[i]
			c.Members[i] = Member{Key: append([]byte(nil), m.Key...), KeyOff: m.KeyOff, Value: m.Value.clone()}
		}
	}
	return c
}
