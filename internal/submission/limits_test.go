package submission_test

import (
	"bufio"
	"fmt"
	"net"
	"testing"
	"time"

	"mailroom/internal/testkit/testapp"
)

// TestSubmissionLimits: the submission listener has the inbound one's
// per-address cap and command budget, and an authenticated session gets
// ten times the budget.
func TestSubmissionLimits(t *testing.T) {
	a := start(t, testapp.WithEnv("MAILROOM_SMTP_MAX_SESSIONS_PER_IP", "2"), testapp.WithEnv("MAILROOM_SMTP_MAX_COMMANDS", "10"))

	anon := dial(t, a.SubmissionAddr())
	for range 10 {
		anon.cmd("NOOP", "250")
	}
	anon.cmd("NOOP", "421 4.7.0")

	authed := dial(t, a.SubmissionAddr())
	authed.auth(a.Key) // EHLO and AUTH: 2 commands
	for range 20 {
		authed.cmd("NOOP", "250")
	}

	// The first session is closed; the second and a third fill the cap.
	waitClosed(t, anon.c)
	dial(t, a.SubmissionAddr())
	c, err := net.DialTimeout("tcp", a.SubmissionAddr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	extra := &conn{t: t, c: c, r: bufio.NewReader(c)}
	extra.expect("421 4.7.0")
	fmt.Fprint(c, "NOOP\r\n")
	waitClosed(t, c)
}

// waitClosed waits for the server to close c.
func waitClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 512)
	for {
		if _, err := c.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the connection stayed open")
			}
			return
		}
	}
}
