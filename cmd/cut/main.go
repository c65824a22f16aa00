// Command cut prepares, verifies and sends privacy cuts of model inputs. See
// docs/cut.1.md for the manual.
package main

import (
	"context"
	"os"

	"github.com/privacycut/privacycut/cmd/internal/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args))
}
