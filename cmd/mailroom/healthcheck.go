package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"mailroom/internal/config"
)

// healthcheck is `mailroom healthcheck`: GET /healthz (or /readyz with
// --ready) on the node's own listener, exit 0 on 200. Container images
// without a shell or curl (distroless) use it for HEALTHCHECK.
func healthcheck(ctx context.Context, cfg *config.Config, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ready := fs.Bool("ready", false, "ask /readyz (database reachable, not draining) instead of /healthz")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	base, err := localURL(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	path := "/healthz"
	if *ready {
		path = "/readyz"
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %d", path, resp.StatusCode)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}

// localURL is the base URL of this host's node listening on addr
// (MAILROOM_HTTP_ADDR): a wildcard address is reached on 127.0.0.1.
func localURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("MAILROOM_HTTP_ADDR %q: %w", addr, err)
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}
