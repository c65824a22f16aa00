package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"google.golang.org/grpc/grpclog"
)

// grpcLogger routes gRPC's own log lines (handshake failures, transport
// errors) into vaultd's JSON log, so that stderr holds only JSON lines.
// Informational lines are dropped. gRPC never sees a value in clear: what
// crosses the socket is sealed, so its messages can carry none.
type grpcLogger struct{ log *slog.Logger }

var _ grpclog.LoggerV2 = grpcLogger{}

func (g grpcLogger) emit(level slog.Level, msg string) {
	g.log.Log(context.Background(), level, "vaultd: grpc", "detail", msg)
}

func (grpcLogger) Info(...any)                      {}
func (grpcLogger) Infoln(...any)                    {}
func (grpcLogger) Infof(string, ...any)             {}
func (g grpcLogger) Warning(args ...any)            { g.emit(slog.LevelWarn, fmt.Sprint(args...)) }
func (g grpcLogger) Warningln(args ...any)          { g.emit(slog.LevelWarn, fmt.Sprint(args...)) }
func (g grpcLogger) Warningf(f string, args ...any) { g.emit(slog.LevelWarn, fmt.Sprintf(f, args...)) }
func (g grpcLogger) Error(args ...any)              { g.emit(slog.LevelError, fmt.Sprint(args...)) }
func (g grpcLogger) Errorln(args ...any)            { g.emit(slog.LevelError, fmt.Sprint(args...)) }
func (g grpcLogger) Errorf(f string, args ...any)   { g.emit(slog.LevelError, fmt.Sprintf(f, args...)) }
func (g grpcLogger) Fatal(args ...any)              { g.emit(slog.LevelError, fmt.Sprint(args...)); os.Exit(1) }
func (g grpcLogger) Fatalln(args ...any)            { g.emit(slog.LevelError, fmt.Sprint(args...)); os.Exit(1) }
func (g grpcLogger) Fatalf(f string, args ...any) {
	g.emit(slog.LevelError, fmt.Sprintf(f, args...))
	os.Exit(1)
}
func (grpcLogger) V(l int) bool { return l <= 0 }
