//go:build !linux

package cli

import "os"

// privateStdin returns the standard input unchanged: without attachments
// there is no plugin start to protect it from (see stdin_linux.go).
func privateStdin() *os.File { return os.Stdin }

// selfExecutable is the file the verifier plugin is started from.
func selfExecutable() (string, error) { return os.Executable() }
