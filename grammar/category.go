package grammar

// Category is the category of an owner value: the closed set of docs/FORMATS.md#grammar.
type Category uint8

// The owner categories. CategoryNone is the zero value and names no category.
const (
	CategoryNone Category = iota
	CategoryModule
	CategoryPackage
	CategoryFunction
	CategoryFile
	CategoryTeam
	CategoryPerson
	CategoryHost
	CategoryCredential
	numCategories
)

var categoryNames = [numCategories]string{
	"", "module", "package", "function", "file", "team", "person", "host", "credential",
}

// Categories lists every owner category in declaration order.
func Categories() []Category {
	cs := make([]Category, 0, numCategories-1)
	for c := CategoryModule; c < numCategories; c++ {
		cs = append(cs, c)
	}
	return cs
}

func (c Category) String() string {
	if c < numCategories {
		return categoryNames[c]
	}
	return "invalid"
}

// Valid reports whether c names one of the eight categories.
func (c Category) Valid() bool { return c > CategoryNone && c < numCategories }

// ParseCategory maps a category name to its Category. It is exact and
// case-sensitive: "Module" and "module " are not categories.
func ParseCategory(b []byte) (Category, bool) {
	switch string(b) {
	case "module":
		return CategoryModule, true
	case "package":
		return CategoryPackage, true
	case "function":
		return CategoryFunction, true
	case "file":
		return CategoryFile, true
	case "team":
		return CategoryTeam, true
	case "person":
		return CategoryPerson, true
	case "host":
		return CategoryHost, true
	case "credential":
		return CategoryCredential, true
	}
	return CategoryNone, false
}

// CategorySet is a set of categories, used for the plan's allowed list. The
// zero value means "not given" (a Parser then uses DefaultAllowed); an explicit
// set, even an empty one, is built from NoCategories with With.
type CategorySet uint16

// NoCategories is the explicit empty set: no owner category is allowed.
const NoCategories CategorySet = 1 << CategoryNone

// DefaultAllowed is every category except credential, which is always prohibited.
const DefaultAllowed CategorySet = (1<<numCategories - 1) &^ (1 << CategoryCredential)

// Has reports whether c is in the set.
func (s CategorySet) Has(c Category) bool { return c.Valid() && s&(1<<c) != 0 }

// With returns the set with c added. Adding credential has no effect: it is
// always prohibited.
func (s CategorySet) With(c Category) CategorySet {
	s |= NoCategories
	if !c.Valid() || c == CategoryCredential {
		return s
	}
	return s | 1<<c
}

// Class is the vocabulary class of a public item.
type Class uint8

// The public item classes.
const (
	ClassNone Class = iota
	ClassDiagnostic
	ClassModule
	ClassVersion
	ClassStatus
	ClassCitation
	ClassQuestion
	numClasses
)

var classNames = [numClasses]string{"", "diagnostic", "module", "version", "status", "citation", "question"}

func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return "invalid"
}
