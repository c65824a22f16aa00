package store

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"golang.org/x/sys/unix"
)

// quietLogger is Badger's logger. Badger formats keys and values into some
// of its messages (iterator and backup errors print keys), so no argument
// is printed: only the constant format string of a warning or an error is
// passed on, under the attribute "badger_format", with the class of the
// first error among the arguments: "badger_errno", the errno's name
// (ENOSPC, EIO, ENOENT), and "badger_op", the failed system call or file
// operation ("open", "write", "fallocate"), both from a fixed vocabulary,
// never a path or a message. Info and debug messages are discarded.
type quietLogger struct{ log *slog.Logger }

func (q quietLogger) emit(level slog.Level, format string, args []any) {
	if q.log == nil {
		return
	}
	attrs := []any{"badger_format", format}
	if errno, op := errClass(args); errno != "" || op != "" {
		attrs = append(attrs, "badger_errno", errno, "badger_op", op)
	}
	q.log.Log(context.Background(), level, "store: badger reported a problem", attrs...)
}

func (q quietLogger) Errorf(format string, args ...any)   { q.emit(slog.LevelError, format, args) }
func (q quietLogger) Warningf(format string, args ...any) { q.emit(slog.LevelWarn, format, args) }
func (q quietLogger) Infof(string, ...any)                {}
func (q quietLogger) Debugf(string, ...any)               {}

// errClass returns the class of the first error among args that has one:
// the errno's name ("" when none is in its chain) and the operation of the
// *os.PathError, *os.LinkError or *os.SyscallError in its chain ("" when
// none is). An error of neither kind has no class (both ""). Only
// these fixed words leave: the error's text, which may hold a path or a
// key, does not.
func errClass(args []any) (errno, op string) {
	for _, a := range args {
		err, ok := a.(error)
		if !ok || err == nil {
			continue
		}
		var en unix.Errno
		if errors.As(err, &en) {
			errno = unix.ErrnoName(en)
			if errno == "" {
				errno = "errno"
			}
		}
		var pe *os.PathError
		var le *os.LinkError
		var se *os.SyscallError
		switch {
		case errors.As(err, &pe):
			op = word(pe.Op)
		case errors.As(err, &le):
			op = word(le.Op)
		case errors.As(err, &se):
			op = word(se.Syscall)
		}
		if errno != "" || op != "" {
			return errno, op
		}
	}
	return "", ""
}

// word keeps an operation name when it is a short lower-case word (as the
// os and syscall packages name them), else "other".
func word(s string) string {
	if len(s) == 0 || len(s) > 24 {
		return "other"
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return "other"
		}
	}
	return s
}
