package outbound

import (
	"context"
	"testing"
	"time"

	"mailroom/internal/testkit/smtpsink"
)

// TestEHLOBeforeSTARTTLS: the first EHLO, in plaintext before STARTTLS,
// carries the configured name (not "localhost"), and the one after
// STARTTLS too; one connection.
func TestEHLOBeforeSTARTTLS(t *testing.T) {
	t.Parallel()
	srvTLS, _ := smtpsink.SelfSigned(t)
	sink := smtpsink.Start(t, smtpsink.WithTLS(srvTLS))
	tr := NewMX(loopResolver{}, MXOptions{Port: sink.Port(), HeloName: "out.sender.test"})
	t.Cleanup(func() { _ = tr.Close() })
	if _, err := tr.Send(context.Background(), Envelope{From: "b@example.com", To: []string{"a@dest.test"}}, []byte("Subject: x\r\n\r\nbody\r\n")); err != nil {
		t.Fatal(err)
	}
	msgs := sink.WaitFor(1, 5*time.Second)
	if len(msgs) != 1 || !msgs[0].TLS {
		t.Fatalf("messages %+v", msgs)
	}
	helos := sink.Helos()
	if len(helos) != 2 || helos[0] != (smtpsink.Helo{Name: "out.sender.test", TLS: false, Remote: helos[0].Remote}) ||
		helos[1].Name != "out.sender.test" || !helos[1].TLS || helos[0].Remote != helos[1].Remote {
		t.Fatalf("helos = %+v", helos)
	}
}

// TestNoRedialWithoutSTARTTLS: a server that offers no STARTTLS gets the
// message on the same connection, after one EHLO.
func TestNoRedialWithoutSTARTTLS(t *testing.T) {
	t.Parallel()
	sink := smtpsink.Start(t)
	tr := NewMX(loopResolver{}, MXOptions{Port: sink.Port(), HeloName: "out.sender.test"})
	t.Cleanup(func() { _ = tr.Close() })
	for range 2 {
		res, err := tr.Send(context.Background(), Envelope{From: "b@example.com", To: []string{"a@dest.test"}}, []byte("Subject: x\r\n\r\nbody\r\n"))
		if err != nil || !res.Rcpts[0].OK {
			t.Fatalf("%v %+v", err, res)
		}
	}
	if msgs := sink.WaitFor(2, 5*time.Second); len(msgs) != 2 || msgs[0].TLS {
		t.Fatalf("messages %+v", msgs)
	}
	// Two messages over one pooled session: one EHLO in all.
	if helos := sink.Helos(); len(helos) != 1 || helos[0].Name != "out.sender.test" || helos[0].TLS {
		t.Fatalf("helos = %+v", helos)
	}
}
