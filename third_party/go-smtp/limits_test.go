package smtp_test

import (
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// Mailroom's additions: Server.Command and Server.MaxSessionDuration.

// TestServerIdleNotResetByNoProgress: with a Command hook that calls NOOP
// no progress, a client sending NOOP every 50 ms is still told 421 at the
// idle timeout.
func TestServerIdleNotResetByNoProgress(t *testing.T) {
	_, s, c, scanner := testServerGreeted(t, func(s *smtp.Server) {
		s.ReadTimeout = 300 * time.Millisecond
		s.Command = func(_ *smtp.Conn, verb string) (bool, error) { return verb != "NOOP", nil }
	})
	defer s.Close()
	defer c.Close()

	start := time.Now()
	for time.Since(start) < 2*time.Second {
		io.WriteString(c, "NOOP\r\n")
		if !scanner.Scan() {
			t.Fatalf("connection closed without a reply: %v", scanner.Err())
		}
		if line := scanner.Text(); strings.HasPrefix(line, "421 4.4.2") {
			if d := time.Since(start); d < 250*time.Millisecond {
				t.Fatalf("closed after %v, before the idle timeout", d)
			}
			return
		} else if !strings.HasPrefix(line, "250") {
			t.Fatalf("NOOP answered %q", line)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("NOOP kept the session open past the idle timeout")
}

// TestServerProgressResetsIdle: a command the hook calls progress moves the
// idle deadline.
func TestServerProgressResetsIdle(t *testing.T) {
	_, s, c, scanner := testServerGreeted(t, func(s *smtp.Server) {
		s.ReadTimeout = 300 * time.Millisecond
		s.Command = func(_ *smtp.Conn, verb string) (bool, error) { return verb != "NOOP", nil }
	})
	defer s.Close()
	defer c.Close()

	for i := 0; i < 4; i++ {
		time.Sleep(150 * time.Millisecond)
		io.WriteString(c, "HELO localhost\r\n")
		if !scanner.Scan() || !strings.HasPrefix(scanner.Text(), "250") {
			t.Fatalf("HELO %d answered %q", i, scanner.Text())
		}
	}
}

// TestServerCommandRefused: an error from the hook is answered and closes.
func TestServerCommandRefused(t *testing.T) {
	n := 0
	_, s, c, scanner := testServerGreeted(t, func(s *smtp.Server) {
		s.Command = func(*smtp.Conn, string) (bool, error) {
			if n++; n > 2 {
				return false, errors.New("Too many commands")
			}
			return true, nil
		}
	})
	defer s.Close()
	defer c.Close()

	io.WriteString(c, "NOOP\r\nNOOP\r\nNOOP\r\nNOOP\r\n")
	var got []string
	for scanner.Scan() {
		got = append(got, scanner.Text())
	}
	if len(got) != 3 || got[2] != "421 4.7.0 Too many commands" {
		t.Fatalf("replies %q, want two 250 then 421 4.7.0 and the close", got)
	}
}

// TestServerMaxSessionDuration: a session busy with progress is still
// closed with 421 4.7.0 when its time is up.
func TestServerMaxSessionDuration(t *testing.T) {
	_, s, c, scanner := testServerGreeted(t, func(s *smtp.Server) {
		s.ReadTimeout = time.Minute
		s.MaxSessionDuration = 400 * time.Millisecond
	})
	defer s.Close()
	defer c.Close()

	start := time.Now()
	for time.Since(start) < 2*time.Second {
		time.Sleep(100 * time.Millisecond)
		io.WriteString(c, "HELO localhost\r\n")
		if !scanner.Scan() {
			t.Fatalf("connection closed without a reply: %v", scanner.Err())
		}
		if line := scanner.Text(); strings.HasPrefix(line, "421 4.7.0") {
			if d := time.Since(start); d < 350*time.Millisecond {
				t.Fatalf("closed after %v", d)
			}
			return
		}
	}
	t.Fatal("session outlived MaxSessionDuration")
}

// TestClientResetKeepsHello: after RSET the next transaction goes on
// without a second EHLO.
func TestClientResetKeepsHello(t *testing.T) {
	var ehlos atomic.Int32
	_, s, c, _ := testServer(t, func(s *smtp.Server) {
		s.Command = func(_ *smtp.Conn, verb string) (bool, error) {
			if verb == "EHLO" || verb == "HELO" {
				ehlos.Add(1)
			}
			return true, nil
		}
	})
	defer s.Close()
	cl := smtp.NewClient(c)
	defer cl.Close()
	if err := cl.Hello("localhost"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := cl.Mail("root@nsa.gov", nil); err != nil {
			t.Fatalf("MAIL %d: %v", i, err)
		}
		if err := cl.Reset(); err != nil {
			t.Fatalf("RSET %d: %v", i, err)
		}
	}
	if n := ehlos.Load(); n != 1 {
		t.Fatalf("%d greetings over three transactions and two RSETs, want 1", n)
	}
}
