package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxAnswer caps what one API answer may be: a received message with its
// text and html fits many times over, and an agent gains nothing from more.
const maxAnswer = 8 << 20

// APIError is an answer of the API other than 2xx: its status and the
// spec's code, message and next step, read from either error shape
// ({ error: { code, message, next } } or { error: "<code>", message, hint }).
type APIError struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Next    string `json:"next,omitempty"`
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%s: %s (HTTP %d)", e.Code, e.Message, e.Status)
	if e.Next != "" {
		s += " " + e.Next
	}
	return s
}

// client calls one node's API with one key: the key's scopes and mailbox
// binding are the API's to enforce, never this package's.
type client struct {
	base      string // e.g. http://127.0.0.1:8080, without a trailing slash
	key       string
	userAgent string
	http      *http.Client
}

// call sends method path?query with body (nil: none; else encoded as JSON)
// and returns the answer's JSON, or an *APIError for a non-2xx answer.
func (c *client) call(ctx context.Context, method, path string, query url.Values, body any) (json.RawMessage, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	if len(b) > maxAnswer {
		return nil, fmt.Errorf("%s %s: the answer is over %d bytes", method, path, maxAnswer)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, apiError(resp.StatusCode, b)
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("%s %s: the answer is not JSON (HTTP %d)", method, path, resp.StatusCode)
	}
	return b, nil
}

// apiError reads an error answer in either of the spec's shapes; a body in
// neither (a proxy's page) keeps the status with a generic code.
func apiError(status int, body []byte) *APIError {
	e := &APIError{Status: status, Code: fmt.Sprintf("http_%d", status), Message: http.StatusText(status)}
	var b struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Hint    string          `json:"hint"`
	}
	if json.Unmarshal(body, &b) != nil || len(b.Error) == 0 {
		return e
	}
	var code string
	if json.Unmarshal(b.Error, &code) == nil && code != "" {
		e.Code, e.Next = code, b.Hint
		if b.Message != "" {
			e.Message = b.Message
		}
		return e
	}
	var nested struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Next    string `json:"next"`
	}
	if json.Unmarshal(b.Error, &nested) == nil && nested.Code != "" {
		e.Code, e.Message, e.Next = nested.Code, nested.Message, nested.Next
	}
	return e
}

// route fills format's %s with ids taken from a tool's arguments, each
// escaped as one path segment, so that an id can never reach another
// route ("../api-keys"); an empty id, "." or ".." is refused.
func route(format string, ids ...string) (string, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		id = strings.TrimSpace(id)
		if id == "" || id == "." || id == ".." {
			return "", fmt.Errorf("%q is not an id", id)
		}
		args[i] = url.PathEscape(id)
	}
	return fmt.Sprintf(format, args...), nil
}
