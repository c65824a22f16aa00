// Command cut prepares, verifies and sends privacy cuts of model inputs.
// make install installs it as privacycut, beside coreutils cut(1). See
// cut(1): docs/cut.1, generated from the command table and docs/cut.1.md.
package main

//go:generate go run ../internal/mangen -docs ../../docs

import (
	"context"
	"os"

	"github.com/privacycut/privacycut/cmd/internal/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args))
}
