package verifier

// The test vectors are written by a generator that imports neither censor
// nor verifier.
//go:generate go run ./internal/vecgen -out testdata/vectors
