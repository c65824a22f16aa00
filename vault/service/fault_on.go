//go:build faultinject

// A faultinject build carries deliberate defects, armed one at a time by
// the environment variable VAULTD_FAULT, so that the acceptance suites in
// tests/ can show they catch what they guard. It must never be deployed.
// This package's faults:
//
//	VAULTD_FAULT=recovery-keeps-keys   boot recovery does not destroy the
//	                                   data keys of terminal leases
//	VAULTD_FAULT=log-values            CreateLease writes the opened values
//	                                   to the log
//	VAULTD_FAULT=heap-copy             CreateLease keeps a copy of the
//	                                   opened values on the Go heap

package service

import (
	"log/slog"
	"os"
	"sync"

	"github.com/privacycut/privacycut/vault/arena"
)

var fault = os.Getenv("VAULTD_FAULT")

// faultKeepKeys reports whether boot recovery must skip key destruction.
func faultKeepKeys() bool { return fault == "recovery-keeps-keys" }

var (
	heapMu     sync.Mutex
	heapCopies [][]byte // kept forever: the defect heap-copy plants
)

// faultValues leaks the opened values as the armed fault says.
func faultValues(log *slog.Logger, values *arena.Secret) {
	if values == nil {
		return
	}
	_ = values.Reveal(func(b []byte) error {
		switch fault {
		case "log-values":
			log.Info("vault: fault log-values", "values", string(b))
		case "heap-copy":
			heapMu.Lock()
			heapCopies = append(heapCopies, append([]byte(nil), b...))
			heapMu.Unlock()
		}
		return nil
	})
}
