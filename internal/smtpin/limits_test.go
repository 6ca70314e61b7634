package smtpin_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"mailroom/internal/smtpin"
	"mailroom/internal/smtplimit"
	"mailroom/internal/testkit/wait"
)

// start runs an inbound listener on a loopback port with opts.
func start(t *testing.T, opts smtpin.Options) string {
	t.Helper()
	opts.Addr, opts.Domain = "127.0.0.1:0", "mx.mailroom.test"
	s := smtpin.New(opts)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		s.Stop(ctx)
	})
	return s.Addr()
}

// client is a raw SMTP client: one line out, one reply in.
type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

// reply reads one reply's last line; "" when the server closed instead.
func (c *client) reply() string {
	c.t.Helper()
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		line, err := c.r.ReadString('\n')
		if err != nil {
			return ""
		}
		if len(line) < 4 || line[3] != '-' {
			return strings.TrimRight(line, "\r\n")
		}
	}
}

func (c *client) cmd(line string) string {
	c.t.Helper()
	fmt.Fprintf(c.c, "%s\r\n", line)
	return c.reply()
}

// closed reports whether the server has closed the connection.
func (c *client) closed() bool {
	c.c.SetReadDeadline(time.Now().Add(time.Second))
	_, err := c.r.ReadByte()
	return err != nil
}

// TestSessionsPerIP: the connection past Caps.PerIP from one address
// is told 421 4.7.0 and closed; a place freed is taken again.
func TestSessionsPerIP(t *testing.T) {
	t.Parallel()
	addr := start(t, smtpin.Options{Caps: smtplimit.Caps{PerIP: 3}})
	var open []*client
	for range 3 {
		c := dial(t, addr)
		if got := c.reply(); !strings.HasPrefix(got, "220") {
			t.Fatalf("greeting %q, want 220", got)
		}
		open = append(open, c)
	}
	extra := dial(t, addr)
	if got := extra.reply(); got != "421 4.7.0 Too many connections from your address" {
		t.Fatalf("fourth connection answered %q, want 421 4.7.0", got)
	}
	if !extra.closed() {
		t.Fatal("the refused connection stayed open")
	}
	if got := open[0].cmd("QUIT"); !strings.HasPrefix(got, "221") {
		t.Fatalf("QUIT answered %q", got)
	}
	open[0].closed()
	// The server frees the slot after our read of the close: a new
	// connection is greeted once it has.
	var got string
	wait.For(t, 2*time.Second, func() bool {
		got = dial(t, addr).reply()
		return strings.HasPrefix(got, "220")
	}, "after a QUIT a new connection is still answered %q", got)
}

// TestCommandBudget: every command counts, NOOP and RSET too; the one past
// MaxCommands is answered 421 4.7.0 and the connection closed.
func TestCommandBudget(t *testing.T) {
	t.Parallel()
	addr := start(t, smtpin.Options{Caps: smtplimit.Caps{MaxCommands: 5}})
	c := dial(t, addr)
	c.reply()
	for i, line := range []string{"EHLO client.example", "NOOP", "RSET", "NOOP", "HELP"} {
		if got := c.cmd(line); got == "" || got[0] == '4' {
			t.Fatalf("command %d (%s) answered %q", i+1, line, got)
		}
	}
	if got := c.cmd("NOOP"); got != "421 4.7.0 Too many commands in one session, closing connection" {
		t.Fatalf("sixth command answered %q, want 421 4.7.0", got)
	}
	if !c.closed() {
		t.Fatal("the connection stayed open past the budget")
	}
}

// TestNoopDoesNotHoldSession: a session sending NOOP every 200 ms is closed
// at the idle timeout all the same.
func TestNoopDoesNotHoldSession(t *testing.T) {
	t.Parallel()
	const idle = time.Second
	addr := start(t, smtpin.Options{Timeout: idle})
	c := dial(t, addr)
	c.reply()
	c.cmd("EHLO client.example")
	began := time.Now()
	for time.Since(began) < 3*idle {
		got := c.cmd("NOOP")
		if strings.HasPrefix(got, "421 4.4.2") {
			if d := time.Since(began); d < idle-100*time.Millisecond {
				t.Fatalf("closed after %v, before the idle timeout %v", d, idle)
			}
			return
		}
		if !strings.HasPrefix(got, "250") {
			t.Fatalf("NOOP answered %q", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("NOOP every 200 ms kept the session open for %v past an idle timeout of %v", time.Since(began), idle)
}

// TestSessionLifetime: a session making progress is still told 421 4.7.0
// and closed when MaxDuration is up.
func TestSessionLifetime(t *testing.T) {
	t.Parallel()
	const life = time.Second
	addr := start(t, smtpin.Options{Caps: smtplimit.Caps{MaxDuration: life}})
	c := dial(t, addr)
	began := time.Now()
	c.reply()
	for time.Since(began) < 3*life {
		got := c.cmd("EHLO client.example")
		if strings.HasPrefix(got, "421 4.7.0") {
			if d := time.Since(began); d < life-100*time.Millisecond {
				t.Fatalf("closed after %v, before the lifetime %v", d, life)
			}
			return
		}
		if !strings.HasPrefix(got, "250") {
			t.Fatalf("EHLO answered %q", got)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("the session outlived MaxDuration %v", life)
}
