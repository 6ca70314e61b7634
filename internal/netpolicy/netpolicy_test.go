package netpolicy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

func TestAllowed(t *testing.T) {
	t.Parallel()
	p := New(false)
	for _, c := range []struct {
		addr string
		ok   bool
	}{
		{"93.184.216.34", true},
		{"8.8.8.8", true},
		{"2606:4700::1111", true},
		{"127.0.0.1", false},
		{"127.8.9.10", false},
		{"10.1.2.3", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"172.32.0.1", true},
		{"192.168.1.1", false},
		{"169.254.169.254", false},
		{"100.64.0.1", false},
		{"100.127.255.254", false},
		{"100.128.0.1", true},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"224.0.0.1", false},
		{"255.255.255.255", false},
		{"::1", false},
		{"::", false},
		{"fe80::1", false},
		{"fec0::1", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"ff02::1", false},
		{"::ffff:127.0.0.1", false}, // IPv4-mapped
		{"::ffff:169.254.169.254", false},
		{"::ffff:10.0.0.1", false},
		{"::ffff:8.8.8.8", true},
		{"::ffff:0:127.0.0.1", false}, // IPv4-translated, RFC 2765
		{"::ffff:0:169.254.169.254", false},
		{"::ffff:0:8.8.8.8", true},
		{"::127.0.0.1", false}, // IPv4-compatible
		{"::8.8.8.8", true},
		{"64:ff9b::a9fe:a9fe", false}, // NAT64 of the metadata address
		{"64:ff9b::7f00:1", false},
		{"64:ff9b::808:808", true},
		{"64:ff9b:1::808:808", false}, // local-use NAT64: the operator's own translator
		{"2002:7f00:1::1", false},     // 6to4 of 127.0.0.1
		{"2002:a9fe:a9fe::1", false},  // 6to4 of 169.254.169.254
		{"2002:808:808::1", true},
		{"2001:0:808:808::80ff:fffe", false}, // Teredo, client 127.0.0.1
		{"2001:0:7f00:1::f7f7:f7f7", false},  // Teredo, server 127.0.0.1
		{"2001:0:808:808::f7f7:f7f7", true},  // Teredo, server 8.8.8.8, client 8.8.8.8
		{"2001:db8::1", false},
	} {
		if got := p.Allowed(netip.MustParseAddr(c.addr)); got != c.ok {
			t.Errorf("Allowed(%s) = %v, want %v", c.addr, got, c.ok)
		}
	}
	if !New(true).Allowed(netip.MustParseAddr("127.0.0.1")) {
		t.Error("allowPrivate refuses loopback")
	}
}

// TestControlRefusesBeforeConnecting: a dial to a refused address fails
// with the policy's words and the listener accepts nothing.
func TestControlRefusesBeforeConnecting(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	d := net.Dialer{Timeout: time.Second, ControlContext: New(false).Control}
	_, err = d.DialContext(context.Background(), "tcp", ln.Addr().String())
	var blocked *BlockedError
	if !errors.As(err, &blocked) || !strings.Contains(err.Error(), "address not allowed by the outbound policy") {
		t.Fatalf("dial: %v", err)
	}
	select {
	case <-accepted:
		t.Fatal("the listener accepted a connection")
	case <-time.After(100 * time.Millisecond):
	}
}
