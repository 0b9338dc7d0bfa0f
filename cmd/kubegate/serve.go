package main

import (
	"context"
	"os/signal"
	"syscall"
)

// serveUntilSignal validates a long-running command's options (a bad
// option exits 2), then runs serve until SIGINT or SIGTERM cancels its
// context.
func serveUntilSignal(ctx context.Context, validate func() error, serve func(context.Context) error) error {
	if validate != nil {
		if err := validate(); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return serve(ctx)
}
