// Package mcpserver is `mailroom mcp`: a Model Context Protocol server
// whose tools (send, read, reply, forward, suppressions) call a Mailroom
// node's HTTP API with one API key. The API is the one enforcement point:
// a tool can do exactly what its key may do there, and the API's refusal
// comes back as the tool's error with the API's code and message.
package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options are what the server needs to reach a node.
type Options struct {
	URL     string       // the node's base URL, e.g. http://127.0.0.1:8080
	APIKey  string       // sent as Bearer on every call
	Version string       // the server's version as clients see it
	HTTP    *http.Client // nil: a 60-second timeout, redirects not followed
}

// New builds the MCP server with its tools; run it with Run over a
// transport (stdio for `mailroom mcp`).
func New(o Options) (*mcp.Server, error) {
	base := strings.TrimRight(strings.TrimSpace(o.URL), "/")
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("the node's URL must start with http:// or https://, got %q", o.URL)
	}
	if strings.TrimSpace(o.APIKey) == "" {
		return nil, errors.New("an API key is needed (--api-key or MAILROOM_API_KEY)")
	}
	hc := o.HTTP
	if hc == nil {
		// The API answers no route with a redirect; following one would
		// take the key to whatever a proxy in between names.
		hc = &http.Client{Timeout: 60 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	version := o.Version
	if version == "" {
		version = "devel"
	}
	c := &client{base: base, key: strings.TrimSpace(o.APIKey), userAgent: "mailroom-mcp/" + version, http: hc}
	s := mcp.NewServer(&mcp.Implementation{Name: "mailroom", Title: "Mailroom", Version: version}, &mcp.ServerOptions{
		Instructions: "Tools over one Mailroom node's API, with one API key: a tool can do what the key may do there and nothing else. " +
			"Received mail lives in mailboxes; search_received and list_threads find it, read_received and read_thread read it, reply and forward answer it.",
		Capabilities: &mcp.ServerCapabilities{}, // tools only; no logging over the protocol
	})
	addTools(s, c)
	return s, nil
}

// answer turns an API call's outcome into the tool's result: the API's
// JSON as text and as structured content, or its error as the tool's.
func answer(body json.RawMessage, err error) (*mcp.CallToolResult, any, error) {
	var ae *APIError
	if errors.As(err, &ae) {
		b, _ := json.Marshal(map[string]any{"error": ae})
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: ae.Error()}}, StructuredContent: json.RawMessage(b)}, nil, nil
	}
	if err != nil {
		return nil, nil, err // the SDK answers it as the tool's error
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}
	if len(body) > 0 && body[0] == '{' { // structured content is an object; every answer used here is one
		res.StructuredContent = body
	}
	return res, nil, nil
}
