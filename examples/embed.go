// Package examples holds the bundled example inputs — a projection of
// govulncheck findings from a fictitious private codebase, the development
// vocabulary built from the Go vulnerability database (CC-BY-4.0, see
// NOTICE), and an output schema — embedded so that `cut demo` runs on a fresh
// machine with nothing else.
package examples

import _ "embed"

// Projection is examples/projection.json.
//
//go:embed projection.json
var Projection []byte

// Vocabulary is examples/vocabulary.json.
//
//go:embed vocabulary.json
var Vocabulary []byte

// Schema is examples/schema.json, the output schema of the demo's answers.
//
//go:embed schema.json
var Schema []byte

// Instruction is examples/instruction.txt, the system message of the
// demo's wire profile: public text, approved with the plan.
//
//go:embed instruction.txt
var Instruction []byte
