package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"mailroom/internal/listen"
)

const listenUsage = `  mailroom listen --forward-to URL [--since 1h] [--events email.delivered,...] [--secret whsec_...] [--api-key KEY] [--url API]
                                      post the workspace's events to URL, signed as webhooks are
`

// listenCommand is `mailroom listen`: a client of a running node, so it
// reads no configuration but its flags and MAILROOM_API_KEY, MAILROOM_URL
// and MAILROOM_LISTEN_SECRET.
func listenCommand(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer) error {
	env := func(k, def string) string {
		if v, ok := lookupEnv(k); ok && v != "" {
			return v
		}
		return def
	}
	fs := flag.NewFlagSet("listen", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // a wrong line prints the usage instead
	forwardTo := fs.String("forward-to", "", "the URL every event is posted to (required)")
	since := fs.String("since", "", "first replay the events since a duration back (1h) or an RFC 3339 time")
	types := fs.String("events", "", "comma-separated event types (default: every type)")
	secret := fs.String("secret", env("MAILROOM_LISTEN_SECRET", ""), "signing secret (default: a new one, printed at start)")
	key := fs.String("api-key", env("MAILROOM_API_KEY", ""), "API key (default $MAILROOM_API_KEY)")
	api := fs.String("url", env("MAILROOM_URL", "http://localhost:8080"), "the Mailroom API's base URL (default $MAILROOM_URL)")
	if err := fs.Parse(args); err != nil {
		fmt.Fprint(stderr, usage)
		return usageError{err.Error()}
	}
	if *forwardTo == "" || fs.NArg() > 0 {
		fmt.Fprint(stderr, usage)
		return usageError{"listen needs --forward-to URL and no other arguments"}
	}
	var list []string
	for t := range strings.SplitSeq(*types, ",") {
		if t = strings.TrimSpace(t); t != "" {
			list = append(list, t)
		}
	}
	return listen.Run(ctx, listen.Options{APIURL: *api, APIKey: *key, ForwardTo: *forwardTo, Since: *since, Types: list, Secret: *secret, Out: stdout})
}
