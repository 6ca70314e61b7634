package outbound

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// scripted is a minimal SMTP server that records the commands it gets,
// offers CHUNKING or not, and can drop each session after one message
// without a word (a server that went away while the session sat idle).
type scripted struct {
	ln       net.Listener
	chunking bool
	drop     bool
	mu       sync.Mutex
	cmds     []string
	msgs     [][]byte
	sessions int
}

func startScripted(t *testing.T, chunking, drop bool) *scripted {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scripted{ln: ln, chunking: chunking, drop: drop}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serve(c)
		}
	}()
	return s
}

func (s *scripted) serve(c net.Conn) {
	defer c.Close()
	s.mu.Lock()
	s.sessions++
	s.mu.Unlock()
	r := bufio.NewReader(c)
	io.WriteString(c, "220 scripted\r\n")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		verb := strings.ToUpper(strings.Fields(line + " x")[0])
		s.mu.Lock()
		s.cmds = append(s.cmds, verb)
		s.mu.Unlock()
		var msg []byte
		switch verb {
		case "EHLO":
			caps := "250-scripted\r\n250-PIPELINING\r\n"
			if s.chunking {
				caps += "250-CHUNKING\r\n"
			}
			io.WriteString(c, caps+"250 8BITMIME\r\n")
		case "BDAT":
			f := strings.Fields(line)
			n, _ := strconv.Atoi(f[1])
			msg = make([]byte, n)
			if _, err := io.ReadFull(r, msg); err != nil {
				return
			}
		case "DATA":
			io.WriteString(c, "354 go on\r\n")
			var b bytes.Buffer
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				if l == ".\r\n" {
					break
				}
				b.WriteString(strings.TrimPrefix(l, "."))
			}
			msg = b.Bytes()
		case "QUIT":
			io.WriteString(c, "221 bye\r\n")
			return
		default:
			io.WriteString(c, "250 2.0.0 ok\r\n")
		}
		if msg != nil {
			s.mu.Lock()
			s.msgs = append(s.msgs, msg)
			s.mu.Unlock()
			io.WriteString(c, "250 2.0.0 queued as 1\r\n")
			if s.drop {
				return
			}
		}
	}
}

func (s *scripted) seen() (cmds []string, msgs [][]byte, sessions int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.cmds...), append([][]byte(nil), s.msgs...), s.sessions
}

func count(l []string, v string) int {
	n := 0
	for _, x := range l {
		if x == v {
			n++
		}
	}
	return n
}

// The message goes with BDAT where CHUNKING is offered, with DATA
// elsewhere, byte for byte the same (lines starting with a dot included),
// and a session reused at once says neither RSET nor EHLO again.
func TestChunkingAndSessionReuse(t *testing.T) {
	t.Parallel()
	data := []byte("Subject: dots\r\n\r\n.leading dot\r\n..two\r\nlast line\r\n")
	for _, chunking := range []bool{true, false} {
		srv := startScripted(t, chunking, false)
		r, err := NewRelay("smtp://"+srv.ln.Addr().String(), RelayOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			res, err := r.Send(context.Background(), Envelope{From: "a@b.test", To: []string{"c@d.test"}}, data)
			if err != nil || !res.Rcpts[0].OK || !strings.Contains(res.Rcpts[0].Message, "queued as 1") {
				t.Fatalf("chunking %v: %+v %v", chunking, res, err)
			}
		}
		_ = r.Close()
		cmds, msgs, sessions := srv.seen()
		if len(msgs) != 3 || sessions != 1 {
			t.Fatalf("chunking %v: %d messages over %d sessions", chunking, len(msgs), sessions)
		}
		for _, m := range msgs {
			if !bytes.Equal(m, data) {
				t.Errorf("chunking %v: got %q", chunking, m)
			}
		}
		want, other := "DATA", "BDAT"
		if chunking {
			want, other = "BDAT", "DATA"
		}
		if count(cmds, want) != 3 || count(cmds, other) != 0 || count(cmds, "RSET") != 0 || count(cmds, "EHLO") != 1 {
			t.Errorf("chunking %v: commands %v", chunking, cmds)
		}
	}
}

// A server that dropped a pooled session unannounced costs nothing: the
// message goes again on a new session and is delivered once.
func TestDroppedSessionIsRetried(t *testing.T) {
	t.Parallel()
	srv := startScripted(t, true, true)
	r, err := NewRelay("smtp://"+srv.ln.Addr().String(), RelayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	for i := range 3 {
		res, err := r.Send(context.Background(), Envelope{From: "a@b.test", To: []string{"c@d.test"}}, []byte("Subject: x\r\n\r\nx\r\n"))
		if err != nil || !res.Rcpts[0].OK {
			t.Fatalf("send %d: %+v %v", i, res, err)
		}
	}
	if _, msgs, sessions := srv.seen(); len(msgs) != 3 || sessions != 3 {
		t.Fatalf("%d messages over %d sessions, want 3 over 3", len(msgs), sessions)
	}
}
