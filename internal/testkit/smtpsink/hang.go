package smtpsink

import (
	"bufio"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Hanging is a server that answers a session up to DATA's end and then
// never again, as a relay or MX that hangs after DATA (#39 item 5).
type Hanging struct {
	ln       net.Listener
	sessions atomic.Int32
	done     chan struct{}
	wg       sync.WaitGroup
}

// StartHanging listens on addr (skipping the test when it cannot).
func StartHanging(t testing.TB, addr string) *Hanging {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	h := &Hanging{ln: ln, done: make(chan struct{})}
	t.Cleanup(func() { close(h.done); ln.Close(); h.wg.Wait() })
	h.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.sessions.Add(1)
			h.wg.Go(func() { h.serve(c) })
		}
	})
	return h
}

// Addr is the address it listens on.
func (h *Hanging) Addr() string { return h.ln.Addr().String() }

// Sessions counts the sessions it was given.
func (h *Hanging) Sessions() int { return int(h.sessions.Load()) }

func (h *Hanging) serve(c net.Conn) {
	defer c.Close()
	go func() { <-h.done; c.Close() }()
	r := bufio.NewReader(c)
	io.WriteString(c, "220 hang.example ESMTP\r\n")
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		switch cmd := strings.ToUpper(strings.TrimSpace(line)); {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			io.WriteString(c, "250 hang.example\r\n")
		case cmd == "DATA":
			io.WriteString(c, "354 go on\r\n")
			for {
				l, err := r.ReadString('\n')
				if err != nil || l == ".\r\n" {
					break
				}
			}
			<-h.done // and never answer the message
			return
		default:
			io.WriteString(c, "250 ok\r\n")
		}
	}
}
