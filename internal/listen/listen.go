// Package listen is `mailroom listen`: it follows a workspace's event
// stream (GET /v1/events/stream, server-sent events) and posts each event
// to one local URL, signed exactly as a webhook delivery is signed
// (webhooks.DeliverSigned), so that a receiver under development sees what
// a registered endpoint would. It forwards to that one URL only, follows
// no redirect, and resumes with Last-Event-ID after a dropped connection.
package listen

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"mailroom/internal/webhooks"
)

// maxLine bounds one line of the stream (a received email's event carries
// its text and html).
const maxLine = 64 << 20

// Options configure Run.
type Options struct {
	APIURL    string   // the Mailroom API's base URL (http://localhost:8080)
	APIKey    string   // a key with the scope that reads webhooks
	ForwardTo string   // the one URL every event is posted to
	Since     string   // replay from a duration back (1h) or an RFC 3339 time first; "": from now on
	Types     []string // only these event types; nil: every type
	// Secret signs the forwards; "" mints one, printed at start. Give the
	// same one each run (--secret, MAILROOM_LISTEN_SECRET) to keep the
	// receiver's configuration.
	Secret string
	Out    io.Writer // one line per event
	// Stream is the client of the stream (no timeout: it stays open); nil:
	// a default one.
	Stream *http.Client
	// Connected, when set, is called each time the stream is open (tests
	// wait for it).
	Connected func()
}

// errFatal marks an answer no reconnect can mend (a bad key, a bad filter).
type errFatal struct{ error }

// Run forwards events until ctx ends (nil then) or the server refuses the
// stream for good.
func Run(ctx context.Context, o Options) error {
	target, err := url.Parse(o.ForwardTo)
	if err != nil || (target.Scheme != "http" && target.Scheme != "https") || target.Host == "" {
		return fmt.Errorf("--forward-to %q is not an http:// or https:// URL", o.ForwardTo)
	}
	if o.APIKey == "" {
		return errors.New("an API key is needed (--api-key or MAILROOM_API_KEY)")
	}
	if o.Secret == "" {
		o.Secret = webhooks.NewSecret()
	} else if k, ok := strings.CutPrefix(o.Secret, "whsec_"); !ok || k == "" || !validBase64(k) {
		// A secret the receiver's Svix/Resend verifier cannot decode would make
		// every forward fail its check there, with no word here.
		return fmt.Errorf("--secret: %q is not a webhook signing secret (whsec_ then base64, as a webhook's signing_secret)", o.Secret)
	}
	if o.Stream == nil {
		o.Stream = &http.Client{}
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	// Private addresses allowed (the receiver is on this machine); the
	// client never follows a redirect, so nothing but ForwardTo is posted to.
	forward := webhooks.NewHTTPClient(true)
	fmt.Fprintf(o.Out, "Forwarding events to %s\nSigning secret: %s\n", o.ForwardTo, o.Secret)

	l := &listener{o: o, forward: forward}
	backoff := time.Second
	for {
		err := l.follow(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var fatal errFatal
		if errors.As(err, &fatal) {
			return fatal.error
		}
		wait := backoff
		var busy retryAfter
		if errors.As(err, &busy) {
			wait = time.Duration(busy)
		}
		if l.delivered {
			backoff, l.delivered = time.Second, false
		} else {
			backoff = min(backoff*2, 30*time.Second)
		}
		fmt.Fprintf(o.Out, "%s stream closed (%v); reconnecting in %s\n", time.Now().Format(time.TimeOnly), err, wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

type retryAfter time.Duration

func (r retryAfter) Error() string { return "busy" }

type listener struct {
	o         Options
	forward   *http.Client
	lastID    string // the last event id the stream sent
	delivered bool   // an event came since the last reconnect
}

// follow opens the stream once and forwards its events until it ends.
func (l *listener) follow(ctx context.Context) error {
	q := url.Values{}
	if len(l.o.Types) > 0 {
		q.Set("types", strings.Join(l.o.Types, ","))
	}
	if l.lastID == "" && l.o.Since != "" {
		q.Set("since", l.o.Since)
	}
	u := strings.TrimSuffix(l.o.APIURL, "/") + "/v1/events/stream"
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return errFatal{fmt.Errorf("--url %q: %w", l.o.APIURL, err)}
	}
	req.Header.Set("Authorization", "Bearer "+l.o.APIKey)
	req.Header.Set("Accept", "text/event-stream")
	if l.lastID != "" {
		req.Header.Set("Last-Event-ID", l.lastID)
	}
	resp, err := l.o.Stream.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		return retryAfter(time.Duration(max(secs, 1)) * time.Second)
	case resp.StatusCode >= 500:
		return fmt.Errorf("the stream answered %d", resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return errFatal{fmt.Errorf("the stream answered %d: %s", resp.StatusCode, strings.TrimSpace(string(b)))}
	}
	if l.o.Connected != nil {
		l.o.Connected()
	}
	return l.read(ctx, resp.Body)
}

// read parses server-sent events (the WHATWG format: field lines, a blank
// line ends an event, ':' starts a comment) and forwards each one.
func (l *listener) read(ctx context.Context, body io.Reader) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var id, event string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if len(data) > 0 {
				l.forwardOne(ctx, event, strings.Join(data, "\n"))
			}
			if id != "" {
				l.lastID = id
			}
			id, event, data = "", "", nil
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			id = value
		case "event":
			event = value
		case "data":
			data = append(data, value)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return io.ErrUnexpectedEOF
}

// forwardOne posts one event's body, signed, and prints what came back.
func (l *listener) forwardOne(ctx context.Context, event, data string) {
	l.delivered = true
	var env struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal([]byte(data), &env)
	now := time.Now()
	a := webhooks.DeliverSigned(ctx, l.forward, l.o.ForwardTo, env.ID, event, []byte(data), []string{l.o.Secret}, now)
	status := strconv.Itoa(a.StatusCode)
	if a.StatusCode == 0 {
		status = "error: " + a.Err
	}
	fmt.Fprintf(l.o.Out, "%s %s %s %s\n", now.Format(time.TimeOnly), event, env.ID, status)
}

func validBase64(s string) bool {
	_, err := base64.StdEncoding.DecodeString(s)
	return err == nil
}
