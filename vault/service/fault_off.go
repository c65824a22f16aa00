//go:build !faultinject

package service

import (
	"log/slog"

	"github.com/privacycut/privacycut/vault/arena"
)

// faultKeepKeys reports false outside a faultinject build.
func faultKeepKeys() bool { return false }

// faultValues does nothing outside a faultinject build.
func faultValues(*slog.Logger, *arena.Secret) {}
