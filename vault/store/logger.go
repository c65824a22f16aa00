package store

import (
	"context"
	"log/slog"
)

// quietLogger is Badger's logger. Badger formats keys and values into some
// of its messages (iterator and backup errors print keys), so the arguments
// are dropped unread: only the constant format string of a warning or an
// error is passed on, under the attribute "badger_format". Info and debug
// messages are discarded.
type quietLogger struct{ log *slog.Logger }

func (q quietLogger) emit(level slog.Level, format string) {
	if q.log == nil {
		return
	}
	q.log.Log(context.Background(), level, "store: badger reported a problem", "badger_format", format)
}

func (q quietLogger) Errorf(format string, _ ...any)   { q.emit(slog.LevelError, format) }
func (q quietLogger) Warningf(format string, _ ...any) { q.emit(slog.LevelWarn, format) }
func (q quietLogger) Infof(string, ...any)             {}
func (q quietLogger) Debugf(string, ...any)            {}
