package main

import (
	"context"
	"flag"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"mailroom/internal/config"
	"mailroom/internal/mcpserver"
	"mailroom/internal/version"
)

const mcpUsage = `  mailroom mcp [--url URL] [--api-key KEY]   an MCP server on stdin/stdout whose tools call a node's API with KEY
                                      (MAILROOM_URL, default this host's MAILROOM_HTTP_ADDR; MAILROOM_API_KEY)
`

// mcpServe is `mailroom mcp`: the Model Context Protocol over stdio, each
// tool one call of the node's HTTP API with the key given (docs/mcp.md).
// It reads no server configuration: it runs wherever the agent runs.
func mcpServe(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdin io.ReadCloser, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(k string) string { v, _ := lookupEnv(k); return v }
	// The environment is read after parsing, not as the flags' defaults,
	// which a usage message would print: the key with them.
	url := fs.String("url", "", "the node's base URL (default MAILROOM_URL, else this host's MAILROOM_HTTP_ADDR)")
	key := fs.String("api-key", "", "the API key every tool call uses (default MAILROOM_API_KEY; prefer it: a flag shows in ps)")
	if err := fs.Parse(args); err != nil {
		return usageError{err.Error()}
	}
	if *url == "" {
		*url = env("MAILROOM_URL")
	}
	if *key == "" {
		*key = env("MAILROOM_API_KEY")
	}
	if fs.NArg() > 0 {
		return usageError{"mcp takes no arguments, only --url and --api-key"}
	}
	if *key == "" {
		return usageError{"mcp needs an API key: --api-key KEY or MAILROOM_API_KEY"}
	}
	if *url == "" {
		addr := env("MAILROOM_HTTP_ADDR")
		if addr == "" {
			addr = config.DefaultHTTPAddr
		}
		base, err := localURL(addr)
		if err != nil {
			return err
		}
		*url = base
	}
	s, err := mcpserver.New(mcpserver.Options{URL: *url, APIKey: *key, Version: version.Read().Version})
	if err != nil {
		return usageError{err.Error()}
	}
	return s.Run(ctx, &mcp.IOTransport{Reader: stdin, Writer: nopWriteCloser{stdout}})
}

// nopWriteCloser leaves stdout open when the session ends: main owns it.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
